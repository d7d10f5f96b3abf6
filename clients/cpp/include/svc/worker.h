// Worker loop (spec "Worker task loop", "Worker loop" states): a managed process fetches task
// payloads from the daemon and returns results (App Mesh 3.0's AppMeshWorker, renamed SvcWorker).
//
//   fetching ── 200 ─▶ handler ─▶ PUT result (X-Task-Id) ─▶ fetching
//      │  204 (long poll ended) ─▶ fetching
//      │  412 ─▶ throw ProcessSupersededError        (no retry)
//      │  400 ─▶ throw WorkerRejectedError           (no retry)
//      │  other failure ─▶ wait 100 ms (fixed floor, no backoff, unlimited) ─▶ fetching
//      └  stop flag set ─▶ return (nothing thrown)
//
// The process key travels only in the X-Svc-Process-Key header, never in the URL.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "svc/transport.h"

namespace svc {

struct WorkerTask {
    std::string id;          // X-Task-Id
    std::string contentType; // of the payload
    std::string body;        // the payload bytes
    std::string deadline;    // X-Task-Deadline (ISO 8601), when sent
};

struct WorkerReply {
    std::string body;
    std::string contentType = "text/plain; charset=utf-8";
};

class SvcWorker {
public:
    using TransportFactory = std::function<std::unique_ptr<Transport>(const std::string &daemonUrl)>;
    static constexpr std::chrono::milliseconds RETRY_FLOOR{100};

    /**
     * Reads SVC_PROCESS_KEY, SVC_APPLICATION_NAME and SVC_DAEMON_URL from `env` (empty: the process
     * environment); a missing one throws WorkerEnvironmentError at once. REST to SVC_DAEMON_URL.
     */
    explicit SvcWorker(const TlsOptions &tls = {}, std::map<std::string, std::string> env = {});
    SvcWorker(TransportFactory factory, std::map<std::string, std::string> env = {});

    /** Long poll of one fetch, seconds (default 30). */
    void setPollSeconds(int seconds) { m_pollSeconds = seconds; }
    /** Told about each failure that is retried. */
    void onRetry(std::function<void(const std::string &reason)> callback) { m_onRetry = std::move(callback); }

    /** Fetches the next task, retrying transient failures; nullopt once `stop` is set. */
    std::optional<WorkerTask> fetchTask(const std::atomic<bool> *stop = nullptr);
    /** Returns the result of the task fetched last. False when the daemon no longer wanted it. */
    bool sendTaskResult(const WorkerReply &reply, const std::atomic<bool> *stop = nullptr);
    /** The loop: fetch, handle, return, until `stop` is set (returns) or a permanent error (throws). */
    void run(const std::function<WorkerReply(const WorkerTask &)> &handler, const std::atomic<bool> &stop);

    const std::string &appName() const noexcept { return m_appName; }

private:
    void pause(const std::atomic<bool> *stop);
    void retry(const std::string &reason, const std::atomic<bool> *stop);

    std::string m_processKey;
    std::string m_appName;
    std::unique_ptr<Transport> m_transport;
    int m_pollSeconds = 30;
    std::string m_lastTaskId;
    std::function<void(const std::string &)> m_onRetry;
};

} // namespace svc
