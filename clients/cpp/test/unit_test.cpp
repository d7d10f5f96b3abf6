// Pure logic without a daemon: the demultiplexer's rules, the error registry, URL parsing, the
// worker loop's states (on a scripted transport), the bearer setter.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "support.h"
#include "svc/client.h"
#include "svc/demux.h"
#include "svc/worker.h"

namespace svc::test {
namespace {

wire::Response push(const std::string &id, int sequence, const std::string &type = "STATUS") {
    wire::Response r;
    r.uuid = wire::randomUuid();
    r.request_uri = wire::EVENT_REQUEST_URI;
    r.http_status = 200;
    r.body = nlohmann::json{{"subscription_id", id}, {"sequence", sequence}, {"event_type", type}}.dump();
    return r;
}

/** Collects a callback's events; waits for a count. */
struct Collector {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<nlohmann::json> events;
    EventCallback callback() {
        return [this](const nlohmann::json &event) {
            std::lock_guard<std::mutex> lock(mutex);
            events.push_back(event);
            changed.notify_all();
        };
    }
    bool waitFor(size_t count) {
        std::unique_lock<std::mutex> lock(mutex);
        return changed.wait_for(lock, std::chrono::seconds(30), [&] { return events.size() >= count; });
    }
};

TEST(Demux, ResponsesGoToTheirWaiterByUuid) {
    Demultiplexer demux;
    auto first = demux.expect("a");
    auto second = demux.expect("b");
    wire::Response r;
    r.uuid = "b";
    r.request_uri = "/svc/self";
    r.http_status = 201;
    demux.deliver(r);
    EXPECT_EQ(second.get().http_status, 201);
    EXPECT_EQ(demux.pendingRequests(), 1u);
    r.uuid = "unknown";
    demux.deliver(r); // a late answer is ignored
    demux.stop("test");
    EXPECT_THROW(first.get(), TransportDisconnectedError);
    EXPECT_THROW(demux.expect("c").get(), TransportDisconnectedError);
}

TEST(Demux, EventsBeforeRegistrationAreFlushedInOrder) {
    Collector collector;
    Demultiplexer demux;
    for (int i = 1; i <= 5; ++i) demux.deliver(push("s", i));
    EXPECT_EQ(demux.bufferedEvents("s"), 5u);
    demux.registerCallback("s", collector.callback());
    for (int i = 6; i <= 8; ++i) demux.deliver(push("s", i));
    ASSERT_TRUE(collector.waitFor(8));
    for (int i = 0; i < 8; ++i) EXPECT_EQ(collector.events[i]["sequence"], i + 1);
    EXPECT_EQ(demux.bufferedSubscriptions(), 0u);
}

TEST(Demux, TheSubscriptionIdFallsBackToTheHeader) {
    Collector collector;
    Demultiplexer demux;
    wire::Response r = push("", 1);
    r.body = R"({"event_type":"START","sequence":1})";
    r.headers["X-Subscription-Id"] = "from-header";
    demux.deliver(r);
    EXPECT_EQ(demux.bufferedEvents("from-header"), 1u);
    demux.registerCallback("from-header", collector.callback());
    ASSERT_TRUE(collector.waitFor(1));
    EXPECT_EQ(collector.events[0]["subscription_id"], "from-header");
}

TEST(Demux, CapsBoundTheBuffers) {
    Collector collector;
    Demultiplexer demux;
    for (int id = 0; id < 70; ++id) demux.deliver(push("id-" + std::to_string(id), 1));
    EXPECT_EQ(demux.bufferedSubscriptions(), 64u);
    EXPECT_EQ(demux.droppedEvents(), 6u);
    for (int i = 0; i < 1005; ++i) demux.deliver(push("id-0", i + 2));
    EXPECT_EQ(demux.bufferedEvents("id-0"), 1000u);
    EXPECT_EQ(demux.droppedEvents(), 12u);
    demux.registerCallback("id-0", collector.callback());
    ASSERT_TRUE(collector.waitFor(1000));
    EXPECT_EQ(collector.events.front()["sequence"], 7); // the oldest six were dropped
    demux.stop("test");
    EXPECT_EQ(demux.bufferedSubscriptions(), 0u);
}

TEST(Demux, MalformedEventBodiesAreIgnored) {
    Demultiplexer demux;
    for (const char *body : {"", "not json", "[1,2]", "null", R"({"subscription_id":7})", "{\"a\":"}) {
        wire::Response r = push("x", 1);
        r.body = body;
        demux.deliver(r);
    }
    EXPECT_EQ(demux.bufferedSubscriptions(), 0u);
}

TEST(Demux, ASlowCallbackBlocksNeitherTheReaderNorOtherSubscriptions) {
    std::mutex gate;
    std::unique_lock<std::mutex> hold(gate);
    std::atomic<int> slowSeen{0};
    Collector fast;
    Demultiplexer demux;
    demux.registerCallback("slow", [&](const nlohmann::json &) {
        ++slowSeen;
        std::lock_guard<std::mutex> wait(gate); // blocks until the test releases it
    });
    demux.registerCallback("fast", fast.callback());
    demux.deliver(push("slow", 1));
    demux.deliver(push("slow", 2));
    demux.deliver(push("fast", 1)); // deliver() returned although "slow" is stuck
    ASSERT_TRUE(fast.waitFor(1));
    auto waiter = demux.expect("u");
    wire::Response r;
    r.uuid = "u";
    r.request_uri = "/svc/self";
    r.http_status = 200;
    demux.deliver(r);
    EXPECT_EQ(waiter.get().http_status, 200);
    hold.unlock();
    ASSERT_TRUE(eventually([&] { return slowSeen == 2; }));
    demux.unregisterCallback("slow");
}

TEST(Demux, StopSendsDisconnectedToEveryCallback) {
    Collector a, b, late;
    Demultiplexer demux;
    demux.registerCallback("a", a.callback());
    demux.registerCallback("b", b.callback());
    demux.deliver(push("pending", 1));
    demux.stop("gone");
    demux.stop("twice"); // idempotent
    ASSERT_TRUE(a.waitFor(1));
    ASSERT_TRUE(b.waitFor(1));
    EXPECT_EQ(a.events[0], (nlohmann::json{{"subscription_id", "a"}, {"event_type", "__disconnected__"}}));
    EXPECT_EQ(demux.bufferedSubscriptions(), 0u);
    demux.registerCallback("late", late.callback());
    ASSERT_TRUE(late.waitFor(1));
    EXPECT_EQ(late.events[0]["event_type"], "__disconnected__");
}

TEST(Demux, EventsAfterUnsubscribeAreDropped) {
    Collector c;
    Demultiplexer demux;
    demux.registerCallback("s", c.callback());
    demux.unregisterCallback("s");
    demux.deliver(push("s", 1));
    EXPECT_EQ(demux.bufferedSubscriptions(), 0u);
    EXPECT_EQ(demux.registeredSubscriptions(), 0u);
}

TEST(Demux, RemovedSubscriptionsDoNotAccumulateThreads) {
    Collector c;
    Demultiplexer demux;
    for (int i = 0; i < 200; ++i) {
        const std::string id = "s" + std::to_string(i);
        demux.registerCallback(id, c.callback());
        demux.unregisterCallback(id);
    }
    ASSERT_TRUE(eventually([&] {
        demux.registerCallback("probe", c.callback()); // reaps the dispatchers that returned
        demux.unregisterCallback("probe");
        return demux.dispatcherThreads() <= 2;
    }));
    demux.registerCallback("x", c.callback());
    EXPECT_THROW(demux.registerCallback("x", c.callback()), SvcError); // one callback per subscription
    EXPECT_EQ(demux.registeredSubscriptions(), 1u);
}

TEST(Errors, EveryCodeOfTheRegistryIsATypedErrorWithItsStatus) {
    const auto registry = loadSpec("errors.json");
    ASSERT_GT(registry.size(), 20u);
    for (const auto &[code, entry] : registry.items()) {
        const int status = entry.at("status");
        const auto error = SvcRequestError::fromResponse(
            status, nlohmann::json{{"error", code}, {"message", "m-" + code}}.dump(), {{"x", "y"}});
        EXPECT_EQ(error.code(), code);
        EXPECT_EQ(error.status(), status);
        EXPECT_EQ(std::string(error.what()), "m-" + code);
    }
}

TEST(Errors, ABodyThatIsNoErrorKeepsTheStatus) {
    for (const char *body : {"", "<html>", "[]", R"({"error":5})", "\xff\xfe"}) {
        const auto error = SvcRequestError::fromResponse(502, body);
        EXPECT_EQ(error.code(), "http_502");
        EXPECT_EQ(error.status(), 502);
    }
}

TEST(Url, ParsesAndRefusesHostileValues) {
    const auto url = parseUrl("https://127.0.0.1:6058/x");
    EXPECT_EQ(url.host, "127.0.0.1");
    EXPECT_EQ(url.port, 6058);
    EXPECT_EQ(url.path, "/x");
    EXPECT_EQ(parseUrl("wss://[::1]:7").host, "::1");
    for (const char *bad : {"", "127.0.0.1:6058", "https://", "https://h:0", "https://h:99999", "https://h:12a",
                            "https://h:123456789012"})
        EXPECT_THROW(parseUrl(bad), SvcError) << bad;
    EXPECT_THROW(makeRestTransport("ftp://h"), SvcError);
}

TEST(Client, PathSegmentsArePercentEncoded) {
    EXPECT_EQ(ClientHttp::segment("a b/c?d#%"), "a%20b%2Fc%3Fd%23%25");
    EXPECT_EQ(ClientHttp::segment("client:svc-automation"), "client%3Asvc-automation");
    EXPECT_EQ(ClientHttp::segment("café"), "caf%C3%A9");
}

/** A transport answering from a script, recording the calls. */
class ScriptedTransport : public Transport {
public:
    std::deque<std::function<WireResult(const WireCall &)>> script;
    std::vector<WireCall> calls;
    std::string kind() const override { return "rest"; }
    void close() override {}
    WireResult call(const WireCall &call) override {
        calls.push_back(call);
        if (script.empty()) throw SvcConnectionError("script ended");
        auto step = script.front();
        script.pop_front();
        return step(call);
    }
};

WireResult answer(int status, const std::string &body = "", wire::StringMap headers = {}) {
    WireResult r;
    r.status = status;
    r.body = body;
    r.headers = std::move(headers);
    return r;
}

const std::map<std::string, std::string> ENV{
    {"SVC_PROCESS_KEY", "secret-key"}, {"SVC_APPLICATION_NAME", "w"}, {"SVC_DAEMON_URL", "https://127.0.0.1:1"}};

SvcWorker scriptedWorker(ScriptedTransport *&out) {
    return SvcWorker(
        [&out](const std::string &) {
            auto transport = std::make_unique<ScriptedTransport>();
            out = transport.get();
            return transport;
        },
        ENV);
}

TEST(Worker, MissingEnvironmentIsAnImmediateError) {
    for (const char *missing : {"SVC_PROCESS_KEY", "SVC_APPLICATION_NAME", "SVC_DAEMON_URL"}) {
        auto env = ENV;
        env[missing] = "";
        int made = 0;
        EXPECT_THROW(SvcWorker([&](const std::string &) { ++made; return std::unique_ptr<Transport>(); }, env),
                     WorkerEnvironmentError);
        EXPECT_EQ(made, 0);
    }
}

TEST(Worker, SupersededKeyStopsAtOnce) {
    ScriptedTransport *t = nullptr;
    auto worker = scriptedWorker(t);
    t->script.push_back([](const WireCall &) { return answer(412, R"({"error":"process_superseded","message":"old"})"); });
    std::atomic<bool> stop{false};
    EXPECT_THROW(worker.run([](const WorkerTask &) { return WorkerReply{}; }, stop), ProcessSupersededError);
    EXPECT_EQ(t->calls.size(), 1u);
}

TEST(Worker, RejectionStopsAtOnce) {
    ScriptedTransport *t = nullptr;
    auto worker = scriptedWorker(t);
    t->script.push_back([](const WireCall &) { return answer(400, R"({"error":"obsolete_process_key","message":"no"})"); });
    std::atomic<bool> stop{false};
    EXPECT_THROW(worker.run([](const WorkerTask &) { return WorkerReply{}; }, stop), WorkerRejectedError);
    EXPECT_EQ(t->calls.size(), 1u);
}

TEST(Worker, OtherFailuresAreRetriedAfterTheFloorThenATaskIsServed) {
    ScriptedTransport *t = nullptr;
    auto worker = scriptedWorker(t);
    std::atomic<bool> stop{false};
    std::vector<std::chrono::steady_clock::time_point> at;
    auto stamp = [&] { at.push_back(std::chrono::steady_clock::now()); };
    t->script.push_back([&](const WireCall &) -> WireResult { stamp(); throw SvcConnectionError("refused"); });
    t->script.push_back([&](const WireCall &) { stamp(); return answer(503, R"({"error":"unavailable","message":"x"})"); });
    t->script.push_back([&](const WireCall &) { stamp(); return answer(204); });
    t->script.push_back([&](const WireCall &) {
        stamp();
        auto r = answer(200, "ping", {{"x-task-id", "t1"}});
        r.contentType = "text/plain";
        return r;
    });
    t->script.push_back([&](const WireCall &) {
        stop = true;
        return answer(200, "{}");
    });
    std::vector<std::string> seen;
    worker.run(
        [&](const WorkerTask &task) {
            seen.push_back(task.body);
            return WorkerReply{"pong", "text/plain"};
        },
        stop);
    EXPECT_EQ(seen, std::vector<std::string>{"ping"});
    ASSERT_EQ(t->calls.size(), 5u);
    EXPECT_GE(at[1] - at[0], SvcWorker::RETRY_FLOOR);
    EXPECT_GE(at[2] - at[1], SvcWorker::RETRY_FLOOR);
    const auto &put = t->calls[4];
    EXPECT_EQ(put.method, "PUT");
    EXPECT_EQ(put.headers.at("X-Task-Id"), "t1");
    EXPECT_EQ(put.body, "pong");
    for (const auto &call : t->calls) {
        EXPECT_EQ(call.path, "/svc/app/w/task");
        EXPECT_EQ(call.headers.at("X-Svc-Process-Key"), "secret-key");
        for (const auto &[key, value] : call.query) EXPECT_EQ(value.find("secret-key"), std::string::npos) << key;
    }
}

TEST(Worker, AStopFlagEndsTheLoopWithoutAnError) {
    ScriptedTransport *t = nullptr;
    auto worker = scriptedWorker(t);
    std::atomic<bool> stop{true};
    worker.run([](const WorkerTask &) { return WorkerReply{}; }, stop);
    EXPECT_TRUE(t->calls.empty());
}

TEST(Bearer, SetterAndClearerAndHostileValues) {
    auto transport = std::make_unique<ScriptedTransport>();
    auto *t = transport.get();
    ClientHttp client(std::move(transport));
    EXPECT_FALSE(client.hasBearerToken());
    EXPECT_THROW(client.setBearerToken(""), SvcError);
    EXPECT_THROW(client.setBearerToken("a\r\nX-Evil: 1"), SvcError);
    client.setBearerToken("tok");
    t->script.push_back([](const WireCall &) { return answer(200, "{}"); });
    client.getConfig();
    EXPECT_EQ(t->calls.back().headers.at("Authorization"), "Bearer tok");
    client.clearBearerToken();
    t->script.push_back([](const WireCall &) { return answer(401, R"({"error":"unauthorized","message":"no"})"); });
    try {
        client.getConfig();
        FAIL();
    } catch (const SvcRequestError &error) {
        EXPECT_EQ(error.status(), 401);
        EXPECT_EQ(error.code(), "unauthorized");
    }
    EXPECT_EQ(t->calls.back().headers.count("Authorization"), 0u);
}

} // namespace
} // namespace svc::test
