// waitForAsyncRun (spec "Run-wait contract", outcomes in "Run-wait outcome").
//
//   1 subscribe STDOUT,EXIT,REMOVED ─▶ 2 backfill GET output from 0 (also sees an earlier exit)
//   ─▶ 3 dedupe stdout by byte position ─▶ 4 wait: EXIT │ REMOVED │ __disconnected__ │ timeout
//   5 outcome: exit code (may be negative) │ AppRemovedError │ TransportDisconnectedError │ null
//   6 cleanup: unsubscribe best-effort (not on a dead transport); delete the transient app
//     best-effort ONLY after an observed exit (never after REMOVED or a disconnect)
#include <condition_variable>
#include <deque>
#include <mutex>

#include "svc/client.h"

namespace svc {
namespace {

enum class Kind { None, Exit, Removed, Disconnected, Timeout };

/** Shared with the subscription callback, which may run after the wait returned. */
struct WaitState {
    std::mutex mutex;
    std::condition_variable changed;
    Kind kind = Kind::None;
    std::shared_ptr<int> code;
    std::string message;
    bool backfilled = false;
    std::deque<nlohmann::json> early;
    long long delivered = 0; // byte offset up to which output went to onOutput
    std::function<void(const std::string &, long long)> onOutput;

    void settle(Kind outcome, std::shared_ptr<int> exitCode = nullptr, std::string text = "") {
        if (kind != Kind::None) return;
        kind = outcome;
        code = std::move(exitCode);
        message = std::move(text);
        changed.notify_all();
    }

    void emit(const std::string &output, long long position) {
        const long long end = position + static_cast<long long>(output.size());
        if (end <= delivered) return;
        const long long from = std::max(position, delivered);
        delivered = end;
        if (onOutput) onOutput(output.substr(static_cast<size_t>(from - position)), from);
    }

    void apply(const nlohmann::json &event, const std::string &processUuid) {
        const std::string type = event.value("event_type", "");
        const nlohmann::json data = event.contains("data") && event["data"].is_object() ? event["data"] : nlohmann::json::object();
        const bool otherProcess = data.contains("process_uuid") && data["process_uuid"].is_string() &&
                                  data["process_uuid"].get<std::string>() != processUuid;
        if (type == "STDOUT") {
            if (otherProcess) return;
            if (data.contains("output") && data["output"].is_string() && data.contains("position") &&
                data["position"].is_number_integer())
                emit(data["output"].get<std::string>(), data["position"].get<long long>());
        } else if (type == "EXIT") {
            if (otherProcess) return;
            std::shared_ptr<int> exitCode;
            if (data.contains("exit_code") && data["exit_code"].is_number_integer())
                exitCode = std::make_shared<int>(data["exit_code"].get<int>());
            settle(Kind::Exit, exitCode);
        } else if (type == "REMOVED") settle(Kind::Removed);
        else if (type == DISCONNECTED_EVENT) settle(Kind::Disconnected, nullptr, data.value("message", ""));
    }
};

} // namespace

std::shared_ptr<int> ClientHttp::waitForAsyncRun(const AppRun &run, const WaitOptions &options) {
    Demultiplexer &demux = persistent("waitForAsyncRun");
    auto state = std::make_shared<WaitState>();
    state->onOutput = options.onOutput;
    const std::string processUuid = run.m_procUid;
    std::string subscriptionId;

    // Step 1.
    try {
        subscriptionId = subscribe(run.m_appName, {"STDOUT", "EXIT", "REMOVED"}, [state, processUuid](const nlohmann::json &event) {
                             std::lock_guard<std::mutex> lock(state->mutex);
                             if (state->backfilled) state->apply(event, processUuid);
                             else state->early.push_back(event);
                         }).subscriptionId;
    } catch (const SvcRequestError &error) {
        // Already gone (removed, or a lifecycle cleanup after an exit we did not see).
        if (error.code() == "app_not_found") throw AppRemovedError(run.m_appName);
        throw;
    }
    if (options.onSubscribed) options.onSubscribed();

    auto cleanup = [&](bool transportAlive) {
        if (subscriptionId.empty()) return;
        const std::string id = subscriptionId;
        subscriptionId.clear();
        if (!transportAlive || demux.stopped()) {
            demux.unregisterCallback(id);
            return;
        }
        try {
            unsubscribe(id);
        } catch (const std::exception &) {
            // best effort
        }
    };

    try {
        // Step 2: backfill from position 0 until caught up; an exit code here means it already exited.
        long long position = 0;
        for (;;) {
            AppOutput chunk;
            try {
                chunk = getAppOutput(run.m_appName, position, 0, 0, processUuid);
            } catch (const SvcRequestError &error) {
                if (error.code() != "app_not_found") throw;
                std::lock_guard<std::mutex> lock(state->mutex);
                state->settle(Kind::Removed); // its REMOVED event is on the way or queued
                break;
            }
            std::lock_guard<std::mutex> lock(state->mutex);
            if (chunk.bytes > 0) state->emit(chunk.output, position);
            if (chunk.exited && chunk.bytes == 0) {
                state->settle(Kind::Exit, chunk.exitCode);
                break;
            }
            if (chunk.bytes == 0 || chunk.outputPosition <= position) break;
            position = chunk.outputPosition;
        }
        {
            std::unique_lock<std::mutex> lock(state->mutex);
            state->backfilled = true;
            while (!state->early.empty()) {
                state->apply(state->early.front(), processUuid);
                state->early.pop_front();
            }
            // Step 4.
            const auto done = [&] { return state->kind != Kind::None; };
            if (options.timeout.count() > 0) {
                if (!state->changed.wait_for(lock, options.timeout, done)) state->settle(Kind::Timeout);
            } else state->changed.wait(lock, done);
        }
    } catch (...) {
        cleanup(false);
        throw;
    }

    // Steps 5 and 6.
    switch (state->kind) {
    case Kind::Exit:
        cleanup(true);
        if (options.deleteAfterExit) {
            try {
                deleteApp(run.m_appName);
            } catch (const std::exception &) {
                // best effort: the lifecycle removes it anyway
            }
        }
        if (!state->code) throw SvcError("the run of " + run.m_appName + " exited with an unknown exit code");
        return state->code;
    case Kind::Timeout:
        cleanup(true);
        return nullptr;
    case Kind::Removed:
        cleanup(true);
        throw AppRemovedError(run.m_appName);
    case Kind::Disconnected: {
        const bool local = demux.stopped();
        cleanup(!local);
        throw TransportDisconnectedError(local ? "transport disconnected while waiting for the run"
                                               : "forwarded route disconnected while waiting for the run" +
                                                     (state->message.empty() ? "" : ": " + state->message));
    }
    case Kind::None:
        break;
    }
    return nullptr;
}

} // namespace svc
