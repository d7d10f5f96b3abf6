#include "svc/worker.h"

#include <cstdlib>
#include <thread>

#include "svc/client.h"
#include "svc/errors.h"

namespace svc {
namespace {

std::string requireEnv(const std::map<std::string, std::string> &env, const char *name) {
    std::string value;
    if (env.empty()) {
        const char *raw = std::getenv(name);
        value = raw == nullptr ? "" : raw;
    } else {
        const auto it = env.find(name);
        value = it == env.end() ? "" : it->second;
    }
    if (value.empty()) throw WorkerEnvironmentError(std::string(name) + " is not set: not a managed svc process");
    return value;
}

std::string header(const WireResult &result, const char *name) {
    const auto it = result.headers.find(name);
    return it == result.headers.end() ? "" : it->second;
}

void stopOnPermanent(const WireResult &result) {
    if (result.status == 412)
        throw ProcessSupersededError("the process key belongs to a superseded process (412): " +
                                     std::string(SvcRequestError::fromResponse(result.status, result.body).what()));
    if (result.status == 400)
        throw WorkerRejectedError("the daemon rejected the worker request (400): " +
                                  std::string(SvcRequestError::fromResponse(result.status, result.body).what()));
}

} // namespace

SvcWorker::SvcWorker(const TlsOptions &tls, std::map<std::string, std::string> env)
    : SvcWorker([tls](const std::string &url) { return makeRestTransport(url, tls); }, std::move(env)) {}

SvcWorker::SvcWorker(TransportFactory factory, std::map<std::string, std::string> env) {
    m_processKey = requireEnv(env, "SVC_PROCESS_KEY");
    m_appName = requireEnv(env, "SVC_APPLICATION_NAME");
    const std::string daemonUrl = requireEnv(env, "SVC_DAEMON_URL");
    m_transport = factory(daemonUrl);
}

void SvcWorker::pause(const std::atomic<bool> *stop) {
    const auto until = std::chrono::steady_clock::now() + RETRY_FLOOR;
    while (std::chrono::steady_clock::now() < until && (stop == nullptr || !stop->load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void SvcWorker::retry(const std::string &reason, const std::atomic<bool> *stop) {
    if (m_onRetry) m_onRetry(reason);
    pause(stop);
}

std::optional<WorkerTask> SvcWorker::fetchTask(const std::atomic<bool> *stop) {
    const std::string path = "/svc/app/" + ClientHttp::segment(m_appName) + "/task";
    while (stop == nullptr || !stop->load()) {
        WireCall call{"GET", path, {{"timeout", std::to_string(m_pollSeconds)}}, {{"X-Svc-Process-Key", m_processKey}}, ""};
        call.cancel = stop;
        WireResult result;
        try {
            result = m_transport->call(call);
        } catch (const SvcCancelledError &) {
            break;
        } catch (const std::exception &error) {
            retry(error.what(), stop);
            continue;
        }
        if (result.status == 204) continue;
        stopOnPermanent(result);
        if (result.status != 200) {
            retry(SvcRequestError::fromResponse(result.status, result.body).what(), stop);
            continue;
        }
        WorkerTask task{header(result, "x-task-id"), result.contentType, result.body, header(result, "x-task-deadline")};
        m_lastTaskId = task.id;
        return task;
    }
    return std::nullopt;
}

bool SvcWorker::sendTaskResult(const WorkerReply &reply, const std::atomic<bool> *stop) {
    WireCall call{"PUT",
                  "/svc/app/" + ClientHttp::segment(m_appName) + "/task",
                  {},
                  {{"X-Svc-Process-Key", m_processKey}, {"X-Task-Id", m_lastTaskId}, {"Content-Type", reply.contentType}},
                  reply.body};
    call.cancel = stop;
    WireResult result;
    try {
        result = m_transport->call(call);
    } catch (const SvcCancelledError &) {
        return false;
    } catch (const std::exception &error) {
        retry(error.what(), stop);
        return false;
    }
    stopOnPermanent(result);
    // Any other failure (task withdrawn: 409/404) loses only this result.
    if (result.status < 200 || result.status > 299) {
        if (m_onRetry) m_onRetry(SvcRequestError::fromResponse(result.status, result.body).what());
        return false;
    }
    return true;
}

void SvcWorker::run(const std::function<WorkerReply(const WorkerTask &)> &handler, const std::atomic<bool> &stop) {
    while (!stop.load()) {
        const auto task = fetchTask(&stop);
        if (!task) return;
        sendTaskResult(handler(*task), &stop);
    }
}

} // namespace svc
