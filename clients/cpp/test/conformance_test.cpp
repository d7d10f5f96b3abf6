// S1–S8 run from spec/conformance/*.json as data, against the real daemon, on TCP and WSS: an
// interpreter of the real-daemon steps (spec/README.md "Conformance scenarios as data").
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <regex>
#include <thread>

#include "support.h"

namespace svc::test {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

/** A client whose deleteApp / unsubscribe / getApp calls are recorded (the scenarios' spies). */
class RecordingClient : public ClientHttp {
public:
    using ClientHttp::ClientHttp;
    std::mutex mutex;
    std::map<std::string, std::vector<json>> calls;
    std::atomic<bool> subscribed{false};

    json getApp(const std::string &app) override {
        record("getApplication", {app});
        return ClientHttp::getApp(app);
    }
    void deleteApp(const std::string &app) override {
        record("deleteApplication", {app});
        ClientHttp::deleteApp(app);
    }
    void unsubscribe(const std::string &id, const std::string &app) override {
        record("unsubscribe", {id});
        ClientHttp::unsubscribe(id, app);
    }
    /** Calls the scenario made itself (not the run-wait) go around the spies. */
    json getAppDirect(const std::string &app) { return ClientHttp::getApp(app); }
    void deleteAppDirect(const std::string &app) { ClientHttp::deleteApp(app); }
    void unsubscribeDirect(const std::string &id) { ClientHttp::unsubscribe(id, ""); }

private:
    void record(const std::string &method, json args) {
        std::lock_guard<std::mutex> lock(mutex);
        calls[method].push_back(std::move(args));
    }
};

/** Events collected by a callback, in arrival order. */
struct EventLog {
    std::mutex mutex;
    std::condition_variable changed;
    json events = json::array();
};

/** An error as the scenarios name it. */
std::string errorName(const std::exception_ptr &error) {
    try {
        std::rethrow_exception(error);
    } catch (const AppRemovedError &) {
        return "app_removed";
    } catch (const TransportDisconnectedError &) {
        return "transport_disconnected";
    } catch (const SvcRequestError &e) {
        return e.code();
    } catch (const std::exception &e) {
        return std::string("unexpected: ") + e.what();
    }
}

class Scenario {
public:
    Scenario(const json &spec, std::string transport) : m_spec(spec), m_transport(std::move(transport)) {
        if (spec.at("daemon").value("fresh", false)) {
            m_fresh = std::make_unique<Testkit>();
            m_kit = m_fresh.get();
        } else m_kit = &sharedTestkit();
    }

    ~Scenario() {
        for (auto &[name, wait] : m_waits)
            if (wait.valid()) wait.wait();
    }

    void run() {
        for (const auto &step : m_spec.at("daemon").at("steps")) {
            SCOPED_TRACE(step.dump());
            perform(substitute(step));
            if (::testing::Test::HasFatalFailure()) return;
        }
    }

private:
    json substitute(const json &value) {
        if (value.is_string()) {
            const std::string text = value.get<std::string>();
            static const std::regex whole(R"(^\$\{([^}]+)\}$)");
            std::smatch match;
            if (std::regex_match(text, match, whole)) return lookup(match[1]);
            static const std::regex part(R"(\$\{([^}]+)\})");
            std::string out;
            auto begin = text.cbegin();
            for (std::sregex_iterator it(text.begin(), text.end(), part), end; it != end; ++it) {
                out.append(begin, text.cbegin() + it->position());
                const json found = lookup((*it)[1]);
                out += found.is_string() ? found.get<std::string>() : found.dump();
                begin = text.cbegin() + it->position() + it->length();
            }
            out.append(begin, text.cend());
            return out;
        }
        if (value.is_array()) {
            json out = json::array();
            for (const auto &item : value) out.push_back(substitute(item));
            return out;
        }
        if (value.is_object()) {
            json out = json::object();
            for (const auto &[key, item] : value.items())
                out[key] = key == "while" ? item : substitute(item); // nested steps substitute when run
            return out;
        }
        return value;
    }

    json lookup(const std::string &path) {
        if (path == "transport") return m_transport;
        if (path == "admin_principal") return m_kit->info().at("principals").at("svc-admin");
        const auto dot = path.find('.');
        const std::string name = path.substr(0, dot);
        settle(name);
        if (m_vars.count(name) == 0) return json(); // absent
        json value = m_vars[name];
        if (dot == std::string::npos) return value;
        std::string rest = path.substr(dot + 1);
        for (;;) {
            const auto next = rest.find('.');
            const std::string key = rest.substr(0, next);
            if (!value.is_object() || !value.contains(key)) return json::object({{"$absent", true}});
            value = value[key];
            if (next == std::string::npos) return value;
            rest = rest.substr(next + 1);
        }
    }

    /** A background wait_run named `name` finishes before it is looked at. */
    void settle(const std::string &name) {
        const auto it = m_waits.find(name);
        if (it == m_waits.end() || !it->second.valid()) return;
        m_vars[name] = it->second.get();
    }

    RecordingClient &client(const json &step, const char *key = "client") {
        return *m_clients.at(step.at(key).get<std::string>());
    }

    void perform(const json &step) {
        const std::string what = step.at("do");
        if (what == "connect") {
            const std::string kind = step.value("transport", m_transport);
            auto c = std::make_unique<RecordingClient>(openTransport(*m_kit, kind));
            c->setBearerToken(m_kit->token());
            m_clients[step.at("as")] = std::move(c);
        } else if (what == "register") register_(step);
        else if (what == "run") {
            json app = step.at("app");
            const AppRun run = client(step).runAppAsync(app, 3600, 600);
            m_vars[step.at("as")] = {{"name", run.m_appName}, {"process_uuid", run.m_procUid}};
        } else if (what == "wait_run") waitRun(step);
        else if (what == "await_subscribed") {
            auto &c = client(step);
            ASSERT_TRUE(eventually([&] { return c.subscribed.load(); })) << "the run-wait never subscribed";
        } else if (what == "output") {
            const auto out = client(step).getAppOutput(step.at("name"), step.at("position"), 0, 0, "",
                                                       step.at("timeout_seconds"));
            json chunk{{"bytes", out.bytes}};
            if (out.exitCode) chunk["exit_code"] = *out.exitCode;
            if (step.contains("as")) m_vars[step["as"]] = chunk;
        } else if (what == "advance_clock") {
            // The C++ client keeps no timer on a demultiplexed request (rule 3): there is no clock to
            // advance. The step it wraps (a long poll through the demultiplexer) must still complete.
            perform(substitute(step.at("while")));
        } else if (what == "request") request(step);
        else if (what == "disable") client(step).disableApp(step.at("name"));
        else if (what == "delete_app") client(step).deleteAppDirect(step.at("name"));
        else if (what == "unsubscribe") client(step).unsubscribeDirect(step.at("id"));
        else if (what == "get_app") {
            try {
                m_vars[step.at("as")] = client(step).getAppDirect(step.at("name"));
            } catch (...) {
                m_vars[step.at("as")] = {{"$error", errorName(std::current_exception())}};
            }
        } else if (what == "await_event") {
            auto &log = m_logs.at(step.at("events"));
            const std::string type = step.at("event_type");
            std::unique_lock<std::mutex> lock(log->mutex);
            ASSERT_TRUE(log->changed.wait_for(lock, std::chrono::seconds(30), [&] {
                for (const auto &e : log->events)
                    if (e.value("event_type", "") == type) return true;
                return false;
            })) << "no " << type << " event";
        } else if (what == "kill_daemon") {
            ASSERT_TRUE(m_fresh) << "kill_daemon needs daemon.fresh";
            m_killedAt = Clock::now();
            m_fresh->killDaemon();
        } else if (what == "await_closed") {
            ASSERT_TRUE(client(step).transport().waitClosed(std::chrono::seconds(30)));
        } else if (what == "close") client(step).close();
        else if (what == "expect") expect(step);
        else FAIL() << "unknown step " << what;
    }

    void register_(const json &step) {
        json app = step.at("app");
        app["name"] = step.at("name");
        std::vector<std::string> events;
        EventCallback callback;
        if (step.contains("subscribe")) {
            for (const auto &e : step["subscribe"]) events.push_back(e);
            auto log = std::make_shared<EventLog>();
            m_logs[step.value("events_as", "events")] = log;
            callback = [log](const json &event) {
                std::lock_guard<std::mutex> lock(log->mutex);
                log->events.push_back(event);
                log->changed.notify_all();
            };
        }
        const json answer = client(step).addApp(app, events, callback);
        if (step.contains("as")) m_vars[step["as"]] = answer;
    }

    void waitRun(const json &step) {
        auto &c = client(step);
        const json run = m_vars.at(step.at("run").get<std::string>());
        const std::string as = step.at("as");
        auto output = std::make_shared<std::string>();
        auto outMutex = std::make_shared<std::mutex>();
        WaitOptions options;
        options.timeout = std::chrono::milliseconds(step.at("timeout_ms").get<long long>());
        options.onOutput = [output, outMutex](const std::string &text, long long) {
            std::lock_guard<std::mutex> lock(*outMutex);
            *output += text;
        };
        options.onSubscribed = [&c] { c.subscribed = true; };
        auto task = [&c, run, options]() -> json {
            try {
                const auto code = c.waitForAsyncRun(AppRun(&c, run.at("name"), run.at("process_uuid")), options);
                return code ? json(*code) : json(nullptr);
            } catch (...) {
                return {{"$error", errorName(std::current_exception())}};
            }
        };
        if (step.value("background", false)) m_waits[as] = std::async(std::launch::async, task);
        else m_vars[as] = task();
        if (step.contains("output_as")) {
            settle(as);
            std::lock_guard<std::mutex> lock(*outMutex);
            m_vars[step["output_as"]] = *output;
        }
    }

    void request(const json &step) {
        auto &c = client(step);
        const int count = step.value("count", 1);
        wire::StringMap query;
        if (step.contains("query"))
            for (const auto &[k, v] : step["query"].items()) query[k] = v.get<std::string>();
        const std::string method = step.at("method"), path = step.at("path");
        auto one = [&c, method, path, query]() -> json {
            const auto result = c.request(method, path, query);
            return json::parse(result.body, nullptr, false);
        };
        json answers = json::array();
        if (step.value("sequential", false))
            for (int i = 0; i < count; ++i) answers.push_back(one());
        else {
            std::vector<std::future<json>> all;
            for (int i = 0; i < count; ++i) all.push_back(std::async(std::launch::async, one));
            for (auto &f : all) answers.push_back(f.get());
        }
        if (step.contains("as")) m_vars[step["as"]] = answers;
    }

    size_t demuxCounter(RecordingClient &c, const std::string &name) {
        Demultiplexer *d = c.transport().demux();
        if (d == nullptr) throw std::runtime_error("not a persistent transport");
        if (name == "dropped_events") return d->droppedEvents();
        if (name == "buffered_subscriptions") return d->bufferedSubscriptions();
        if (name == "pending_requests") return d->pendingRequests();
        throw std::runtime_error("unknown demux counter " + name);
    }

    void expect(const json &step) {
        if (step.contains("calls")) {
            const std::string spec = step["calls"];
            const auto dot = spec.find('.');
            auto &c = *m_clients.at(spec.substr(0, dot));
            std::lock_guard<std::mutex> lock(c.mutex);
            const auto &calls = c.calls[spec.substr(dot + 1)];
            if (step.contains("count")) EXPECT_EQ(calls.size(), step["count"].get<size_t>()) << spec;
            if (step.contains("with")) {
                bool found = false;
                for (const auto &args : calls) found = found || args == step["with"];
                EXPECT_TRUE(found) << spec << " was not called with " << step["with"].dump();
            }
            return;
        }
        if (step.contains("demux")) {
            auto &c = *m_clients.at(step["demux"].get<std::string>());
            const json wanted = step.at("equals");
            auto actual = [&] {
                json out = json::object();
                for (const auto &[k, v] : wanted.items()) out[k] = demuxCounter(c, k);
                return out;
            };
            if (step.value("eventually", false)) eventually([&] { return actual() == wanted; });
            EXPECT_EQ(actual(), wanted);
            return;
        }
        const std::string of = step.at("of");
        const json value = lookup(of);
        if (step.contains("error")) {
            ASSERT_TRUE(value.is_object() && value.contains("$error")) << of << " = " << value.dump();
            EXPECT_EQ(value["$error"], step["error"]);
            if (step.contains("within_ms_of_kill"))
                EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - m_killedAt).count(),
                          step["within_ms_of_kill"].get<long long>());
            return;
        }
        if (step.contains("equals")) EXPECT_EQ(value, step["equals"]) << of;
        if (step.value("absent", false)) EXPECT_TRUE(value.is_object() && value.contains("$absent")) << of << " = " << value.dump();
        if (step.contains("type")) {
            const std::string type = step["type"];
            if (type == "string") EXPECT_TRUE(value.is_string()) << of;
            else if (type == "number") EXPECT_TRUE(value.is_number()) << of;
            else ADD_FAILURE() << "unknown type " << type;
        }
        if (step.contains("every")) {
            ASSERT_TRUE(value.is_array());
            for (const auto &item : value)
                for (const auto &[k, v] : step["every"].items()) EXPECT_EQ(item.value(k, json()), v) << item.dump();
        }
        if (step.contains("until")) checkEvents(of, step);
    }

    void checkEvents(const std::string &name, const json &step) {
        auto &log = m_logs.at(name);
        std::lock_guard<std::mutex> lock(log->mutex);
        json events = json::array();
        for (const auto &e : log->events) {
            events.push_back(e);
            if (e.value("event_type", "") == step["until"]) break;
        }
        ASSERT_FALSE(events.empty());
        if (step.value("sequences_gapless", false))
            for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].value("sequence", -1), static_cast<int>(i + 1));
        if (step.contains("first_type")) EXPECT_EQ(events[0].value("event_type", ""), step["first_type"]);
        std::string text;
        json lastStdout;
        for (const auto &e : events)
            if (e.value("event_type", "") == "STDOUT") {
                text += e["data"].value("output", "");
                lastStdout = e;
            }
        if (step.contains("stdout_text")) EXPECT_EQ(text, step["stdout_text"].get<std::string>());
        if (step.value("last_stdout_finished", false)) EXPECT_EQ(lastStdout["data"].value("finished", false), true);
    }

    const json &m_spec;
    std::string m_transport;
    std::unique_ptr<Testkit> m_fresh;
    Testkit *m_kit;
    std::map<std::string, json> m_vars;
    std::map<std::string, std::future<json>> m_waits;
    std::map<std::string, std::unique_ptr<RecordingClient>> m_clients;
    std::map<std::string, std::shared_ptr<EventLog>> m_logs;
    Clock::time_point m_killedAt;
};

struct Case {
    std::string id;
    std::string transport;
};

void PrintTo(const Case &c, std::ostream *out) { *out << c.id << " on " << c.transport; }

std::vector<Case> cases() {
    std::vector<Case> out;
    for (int i = 1; i <= 8; ++i) {
        const auto spec = loadSpec("conformance/S" + std::to_string(i) + ".json");
        for (const auto &transport : spec.at("transports")) out.push_back({spec.at("id"), transport});
    }
    return out;
}

class Conformance : public ::testing::TestWithParam<Case> {};

TEST_P(Conformance, RealDaemon) {
    const json spec = loadSpec("conformance/" + GetParam().id + ".json");
    Scenario scenario(spec, GetParam().transport);
    scenario.run();
}

INSTANTIATE_TEST_SUITE_P(Spec, Conformance, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) { return info.param.id + "_" + info.param.transport; });

TEST(ConformanceFiles, EightScenariosEachOnTcpAndWss) {
    EXPECT_EQ(cases().size(), 16u);
}

} // namespace
} // namespace svc::test
