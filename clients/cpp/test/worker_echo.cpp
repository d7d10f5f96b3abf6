// A managed process for the tests: the worker loop answering each task with "echo:" + payload.
// The daemon's CA comes from SVC_TEST_CA (set in the app's env by the test). SIGTERM stops it.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "svc/errors.h"
#include "svc/worker.h"

namespace {
std::atomic<bool> stopFlag{false};
void onSignal(int) { stopFlag = true; }
} // namespace

int main() {
    std::signal(SIGTERM, onSignal);
    std::signal(SIGINT, onSignal);
    try {
        svc::TlsOptions tls;
        if (const char *ca = std::getenv("SVC_TEST_CA")) tls.caFile = ca;
        svc::SvcWorker worker(tls);
        worker.setPollSeconds(5);
        worker.run([](const svc::WorkerTask &task) { return svc::WorkerReply{"echo:" + task.body, "text/plain"}; }, stopFlag);
        std::puts("worker stopped");
        return 0;
    } catch (const svc::ProcessSupersededError &error) {
        std::printf("superseded: %s\n", error.what());
        return 3;
    } catch (const svc::WorkerRejectedError &error) {
        std::printf("rejected: %s\n", error.what());
        return 4;
    } catch (const std::exception &error) {
        std::printf("error: %s\n", error.what());
        return 1;
    }
}
