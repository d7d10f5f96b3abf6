// Every operation of spec/openapi.json called at least once against the real daemon: one case per
// operationId (each checks that its calls reached that operation), a test that fails when
// openapi.json has an operation without a case, and the daemon's typed errors as the client sees them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>

#include "support.h"
#include "svc/worker.h"

namespace svc::test {
namespace {

using json = nlohmann::json;

/** (method, path template, operationId) of every operation in openapi.json. */
struct Operation {
    std::string method, id;
    std::regex path;
};

const std::vector<Operation> &operations() {
    static const std::vector<Operation> all = [] {
        std::vector<Operation> out;
        const auto doc = loadSpec("openapi.json");
        for (const auto &[path, ops] : doc.at("paths").items())
            for (const auto &[method, op] : ops.items()) {
                if (!op.is_object() || !op.contains("operationId")) continue;
                std::string upper = method;
                for (auto &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                const std::string pattern = std::regex_replace(path, std::regex(R"(\{[^}]+\})"), "[^/]+");
                out.push_back({upper, op["operationId"], std::regex("^" + pattern + "$")});
            }
        return out;
    }();
    return all;
}

std::string operationOf(const std::string &method, const std::string &path) {
    for (const auto &op : operations())
        if (op.method == method && std::regex_match(path, op.path)) return op.id;
    return "";
}

/** Wraps a transport and records the operationId of every call. */
class RecordingTransport : public Transport {
public:
    RecordingTransport(std::unique_ptr<Transport> inner, std::set<std::string> &seen)
        : m_inner(std::move(inner)), m_seen(seen) {}
    std::string kind() const override { return m_inner->kind(); }
    WireResult call(const WireCall &call) override {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_seen.insert(operationOf(call.method, call.path));
        }
        return m_inner->call(call);
    }
    void close() override { m_inner->close(); }
    Demultiplexer *demux() override { return m_inner->demux(); }
    bool waitClosed(std::chrono::milliseconds timeout) override { return m_inner->waitClosed(timeout); }

private:
    std::unique_ptr<Transport> m_inner;
    std::set<std::string> &m_seen;
    std::mutex m_mutex;
};

/** What a case gets: admin clients on each transport, recording the operations they call. */
class Ctx {
public:
    std::set<std::string> seen;
    Testkit &kit = sharedTestkit();

    ClientHttp &on(const std::string &kind) {
        auto &slot = m_clients[kind];
        if (!slot) {
            slot = std::make_unique<ClientHttp>(std::make_unique<RecordingTransport>(openTransport(kit, kind), seen));
            slot->setBearerToken(kit.token());
        }
        return *slot;
    }
    ClientHttp &rest() { return on("rest"); }
    ClientHttp &tcp() { return on("tcp"); }
    ClientHttp &wss() { return on("wss"); }

    /** A registered app (deleted by the destructor), through a client that records nothing. */
    std::string app(const json &definition) {
        json app = definition;
        const std::string name = uniqueName("cpp-op");
        app["name"] = name;
        plain().addApp(app);
        m_apps.push_back(name);
        return name;
    }

    /** An app running svc_worker_echo (the worker loop), trusted to the daemon's CA. */
    std::string workerApp() {
        return app({{"command", SVC_WORKER_ECHO}, {"env", {{"SVC_TEST_CA", kit.info().at("ca")}}}});
    }

    ClientHttp &plain() {
        if (!m_plain) {
            m_plain = connect(kit, "rest");
        }
        return *m_plain;
    }

    ~Ctx() {
        for (const auto &name : m_apps) {
            try {
                plain().deleteApp(name);
            } catch (const std::exception &) {
            }
        }
    }

private:
    std::map<std::string, std::unique_ptr<ClientHttp>> m_clients;
    std::unique_ptr<ClientHttp> m_plain;
    std::vector<std::string> m_apps;
};

const json SLEEP{{"command", "sleep 120"}, {"shell", true}};

std::string tempDir() {
    char pattern[] = "/tmp/svc-cpp-files-XXXXXX";
    const char *dir = mkdtemp(pattern);
    if (dir == nullptr) throw std::runtime_error("mkdtemp failed");
    return dir;
}

void allowFileTransfers(Ctx &ctx, const std::string &root) {
    ctx.plain().setConfig({{"BaseConfig", {{"FileTransferRoots", {root}}}}});
}

std::string slurp(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

/** Fetch and return with a key that is no process's: the worker sees the daemon's refusal. */
void bogusWorker(Ctx &ctx, bool fetch) {
    std::map<std::string, std::string> env{{"SVC_PROCESS_KEY", "not-a-process-key"},
                                           {"SVC_APPLICATION_NAME", ctx.workerApp()},
                                           {"SVC_DAEMON_URL", ctx.kit.info().at("rest").get<std::string>()}};
    std::set<std::string> &seen = ctx.seen;
    Testkit &kit = ctx.kit;
    SvcWorker worker([&seen, &kit](const std::string &url) -> std::unique_ptr<Transport> {
        return std::make_unique<RecordingTransport>(makeRestTransport(url, kit.tls()), seen);
    }, env);
    std::atomic<bool> stop{false};
    std::string reason;
    worker.onRetry([&](const std::string &why) {
        reason = why;
        stop = true;
    });
    try {
        if (fetch) EXPECT_FALSE(worker.fetchTask(&stop).has_value());
        else EXPECT_FALSE(worker.sendTaskResult({"r", "text/plain"}, &stop));
    } catch (const ProcessSupersededError &) {
        return; // 412 is a refusal too
    } catch (const WorkerRejectedError &) {
        return;
    }
    EXPECT_FALSE(reason.empty());
}

/** A stand-alone daemon answers every /svc/cluster/* operation 404 not_found: reached, refused. */
void standAloneRefuses(const std::function<void()> &call) {
    try {
        call();
        ADD_FAILURE() << "a stand-alone daemon answered a cluster operation";
    } catch (const SvcRequestError &e) {
        EXPECT_EQ(e.status(), 404);
        EXPECT_EQ(e.code(), "not_found");
    }
}

const json CLUSTER_TASK{{"replication", 1}, {"port", 0}, {"memoryMB", 0}, {"condition", json::object()},
                        {"content", {{"command", "sleep 60"}, {"shell", true}}}};

const std::map<std::string, std::function<void(Ctx &)>> &cases() {
    static const std::map<std::string, std::function<void(Ctx &)>> all{
        {"listApplications", [](Ctx &c) { EXPECT_TRUE(c.rest().listApps().is_array()); }},
        {"getApplication", [](Ctx &c) {
             const auto name = c.app(SLEEP);
             EXPECT_EQ(c.rest().getApp(name).at("name"), name);
         }},
        {"registerApplication", [](Ctx &c) {
             const std::string name = uniqueName("cpp-reg");
             const auto answer = c.rest().addApp({{"name", name}, {"command", "sleep 60"}, {"shell", true}});
             EXPECT_EQ(answer.at("name"), name);
             c.plain().deleteApp(name);
         }},
        {"deleteApplication", [](Ctx &c) {
             const std::string name = uniqueName("cpp-del");
             c.plain().addApp({{"name", name}, {"command", "sleep 60"}, {"shell", true}});
             c.rest().deleteApp(name);
             try {
                 c.plain().getApp(name);
                 ADD_FAILURE() << "still there";
             } catch (const SvcRequestError &e) {
                 EXPECT_EQ(e.code(), "app_not_found");
             }
         }},
        {"enableApplication", [](Ctx &c) {
             const auto name = c.app(SLEEP);
             c.rest().disableApp(name);
             c.rest().enableApp(name);
             EXPECT_EQ(c.plain().getApp(name).at("enabled"), true);
         }},
        {"disableApplication", [](Ctx &c) {
             const auto name = c.app(SLEEP);
             c.tcp().disableApp(name);
             EXPECT_EQ(c.plain().getApp(name).at("enabled"), false);
         }},
        {"getApplicationHealth", [](Ctx &c) { EXPECT_TRUE(c.rest().checkAppHealth(c.app(SLEEP))); }},
        {"getApplicationOutput", [](Ctx &c) {
             const auto name = c.app({{"command", "echo out-cpp"}, {"shell", true}});
             std::string text;
             long long position = 0;
             for (int i = 0; i < 20 && text.find('\n') == std::string::npos; ++i) {
                 const auto chunk = c.rest().getAppOutput(name, position, 0, 10240, "", 5);
                 text += chunk.output;
                 position = chunk.outputPosition;
             }
             EXPECT_EQ(text, "out-cpp\n");
         }},
        {"runApplication", [](Ctx &c) {
             std::string out;
             WaitOptions options;
             options.onOutput = [&out](const std::string &text, long long) { out += text; };
             const auto run = c.tcp().runAppAsync({{"command", "echo async; exit 3"}, {"shell", true}}, 60, 300);
             const auto code = c.tcp().waitForAsyncRun(run, options);
             ASSERT_TRUE(code);
             EXPECT_EQ(*code, 3);
             EXPECT_EQ(out, "async\n");
         }},
        {"syncRunApplication", [](Ctx &c) {
             const auto [code, output] = c.rest().runAppSync({{"command", "echo sync"}, {"shell", true}}, 60, 300);
             ASSERT_TRUE(code);
             EXPECT_EQ(*code, 0);
             EXPECT_EQ(output, "sync\n");
         }},
        {"runTask", [](Ctx &c) { EXPECT_EQ(c.rest().runTask(c.workerApp(), "ping", 60), "echo:ping"); }},
        {"cancelTasks", [](Ctx &c) { EXPECT_FALSE(c.rest().cancelTask(c.workerApp())); }},
        {"fetchTask", [](Ctx &c) { bogusWorker(c, true); }},
        {"returnTaskResult", [](Ctx &c) { bogusWorker(c, false); }},
        {"listLabels", [](Ctx &c) { EXPECT_TRUE(c.rest().listLabels().is_object()); }},
        {"setLabel", [](Ctx &c) {
             c.rest().addLabel("cpp-label", "v1");
             EXPECT_EQ(c.plain().listLabels().at("cpp-label"), "v1");
         }},
        {"deleteLabel", [](Ctx &c) {
             c.plain().addLabel("cpp-gone", "v");
             c.rest().deleteLabel("cpp-gone");
             EXPECT_FALSE(c.plain().listLabels().contains("cpp-gone"));
         }},
        {"getConfig", [](Ctx &c) { EXPECT_TRUE(c.rest().getConfig().contains("BaseConfig")); }},
        {"updateConfig", [](Ctx &c) {
             EXPECT_EQ(c.rest().setLogLevel("DEBUG"), "DEBUG");
             EXPECT_EQ(c.rest().setLogLevel("INFO"), "INFO");
         }},
        {"getResources", [](Ctx &c) { EXPECT_TRUE(c.rest().getHostResources().is_object()); }},
        {"getSelf", [](Ctx &c) {
             EXPECT_EQ(c.rest().getCurrentPrincipal().at("principal_id"), c.kit.info().at("principals").at("svc-admin"));
         }},
        {"getSelfAlias", [](Ctx &c) {
             EXPECT_EQ(json::parse(c.rest().request("GET", "/svc/self").body).at("principal_id"),
                       c.kit.info().at("principals").at("svc-admin"));
         }},
        {"getSelfPermissions", [](Ctx &c) { EXPECT_EQ(c.rest().getPrincipalPermissions().count("app-reg"), 1u); }},
        {"listRoles", [](Ctx &c) { EXPECT_EQ(c.rest().listRoles().count("svc-viewer"), 1u); }},
        {"setRole", [](Ctx &c) {
             c.rest().updateRole("cpp-role", {"app-view", "label-view"});
             EXPECT_EQ(c.plain().listRoles().at("cpp-role"), (std::set<std::string>{"app-view", "label-view"}));
         }},
        {"deleteRole", [](Ctx &c) {
             c.plain().updateRole("cpp-role-gone", {"app-view"});
             c.rest().deleteRole("cpp-role-gone");
             EXPECT_EQ(c.plain().listRoles().count("cpp-role-gone"), 0u);
         }},
        {"listPermissions", [](Ctx &c) { EXPECT_EQ(c.rest().listPermissions().size(), loadSpec("permissions.json").at("permissions").size()); }},
        {"listPrincipals", [](Ctx &c) {
             EXPECT_TRUE(c.rest().listPrincipals().contains(c.kit.info().at("principals").at("svc-viewer").get<std::string>()));
         }},
        {"setPrincipal", [](Ctx &c) {
             c.rest().updatePrincipal("cpp-principal", {{"roles", {"svc-viewer"}}});
             EXPECT_TRUE(c.plain().listPrincipals().contains("cpp-principal"));
         }},
        {"deletePrincipal", [](Ctx &c) {
             c.plain().updatePrincipal("cpp-principal-gone", {{"roles", {"svc-viewer"}}});
             c.rest().deletePrincipal("cpp-principal-gone");
             const auto after = c.plain().listPrincipals();
             EXPECT_TRUE(!after.contains("cpp-principal-gone") || after["cpp-principal-gone"].value("status", "") == "tombstoned")
                 << after.dump();
         }},
        {"getAuthConfig", [](Ctx &c) { EXPECT_TRUE(c.rest().getAuthConfig().contains("issuer")); }},
        {"getProtectedResourceMetadata", [](Ctx &c) { EXPECT_TRUE(c.rest().getProtectedResourceMetadata().contains("resource")); }},
        {"getOpenApi", [](Ctx &c) { EXPECT_TRUE(c.rest().getOpenApi().contains("paths")); }},
        {"subscribeApplication", [](Ctx &c) {
             const auto name = c.app(SLEEP);
             const auto s = c.tcp().subscribe(name, {"STATUS"}, [](const json &) {});
             EXPECT_FALSE(s.subscriptionId.empty());
             EXPECT_EQ(s.appName, name);
             EXPECT_EQ(c.tcp().transport().demux()->registeredSubscriptions(), 1u);
         }},
        {"unsubscribeApplication", [](Ctx &c) {
             const auto name = c.app(SLEEP);
             const auto s = c.wss().subscribe(name, {"EXIT"}, [](const json &) {});
             c.wss().unsubscribe(s.subscriptionId, name);
             EXPECT_EQ(c.wss().transport().demux()->registeredSubscriptions(), 0u);
         }},
        {"subscribeAll", [](Ctx &c) {
             std::mutex m;
             std::vector<json> events;
             const auto s = c.wss().subscribe("", {"START"}, [&](const json &e) {
                 std::lock_guard<std::mutex> lock(m);
                 events.push_back(e);
             });
             const auto name = c.app({{"command", "sleep 30"}, {"shell", true}});
             EXPECT_TRUE(eventually([&] {
                 std::lock_guard<std::mutex> lock(m);
                 for (const auto &e : events)
                     if (e.value("app_name", "") == name) return true;
                 return false;
             }));
             c.wss().unsubscribe(s.subscriptionId);
         }},
        {"unsubscribeAll", [](Ctx &c) {
             const auto s = c.tcp().subscribe("", {"EXIT"}, [](const json &) {});
             c.tcp().unsubscribe(s.subscriptionId);
             try {
                 c.tcp().unsubscribe(s.subscriptionId); // gone now
                 ADD_FAILURE() << "a removed subscription was removed again";
             } catch (const SvcRequestError &e) {
                 EXPECT_EQ(e.status(), 404);
             }
         }},
        {"getMetrics", [](Ctx &c) { EXPECT_FALSE(c.rest().getMetrics().empty()); }},
        {"uploadFile", [](Ctx &c) {
             const auto root = tempDir();
             allowFileTransfers(c, root);
             const std::string local = root + "/local.bin";
             { std::ofstream(local, std::ios::binary) << std::string("a\0b\xff", 4); }
             c.rest().uploadFile(local, root + "/remote.bin");
             EXPECT_EQ(slurp(root + "/remote.bin"), std::string("a\0b\xff", 4));
         }},
        {"downloadFile", [](Ctx &c) {
             const auto root = tempDir();
             allowFileTransfers(c, root);
             { std::ofstream(root + "/src.txt") << "download me"; }
             c.rest().downloadFile(root + "/src.txt", root + "/copy.txt");
             EXPECT_EQ(slurp(root + "/copy.txt"), "download me");
         }},
        {"uploadFileDataChannel", [](Ctx &c) {
             const auto root = tempDir();
             allowFileTransfers(c, root);
             c.rest().request("POST", "/svc/file/upload/ws", {},
                              {{"X-File-Path", ClientHttp::segment(root + "/ws.txt")}, {"Content-Type", "application/octet-stream"}},
                              "via ws alias");
             EXPECT_EQ(slurp(root + "/ws.txt"), "via ws alias");
         }},
        {"downloadFileDataChannel", [](Ctx &c) {
             const auto root = tempDir();
             allowFileTransfers(c, root);
             { std::ofstream(root + "/d.txt") << "alias"; }
             EXPECT_EQ(c.rest().request("GET", "/svc/file/download/ws", {}, {{"X-File-Path", ClientHttp::segment(root + "/d.txt")}}).body,
                       "alias");
         }},
        {"listClusterApplications", [](Ctx &c) { standAloneRefuses([&] { c.rest().listClusterApps(); }); }},
        {"getClusterApplication", [](Ctx &c) { standAloneRefuses([&] { c.tcp().getClusterApp("cpp-cluster"); }); }},
        {"putClusterApplication", [](Ctx &c) {
             standAloneRefuses([&] { c.rest().addClusterApp("cpp-cluster", CLUSTER_TASK); });
         }},
        {"deleteClusterApplication", [](Ctx &c) { standAloneRefuses([&] { c.wss().deleteClusterApp("cpp-cluster"); }); }},
        {"listClusterNodes", [](Ctx &c) { standAloneRefuses([&] { c.rest().listClusterNodes(); }); }},
        {"getClusterTopology", [](Ctx &c) { standAloneRefuses([&] { c.tcp().getClusterTopology(); }); }},
    };
    return all;
}

std::vector<std::string> caseIds() {
    std::vector<std::string> out;
    for (const auto &[id, body] : cases()) out.push_back(id);
    return out;
}

class OperationCase : public ::testing::TestWithParam<std::string> {};

TEST_P(OperationCase, ReachesTheDaemon) {
    Ctx ctx;
    cases().at(GetParam())(ctx);
    EXPECT_EQ(ctx.seen.count(GetParam()), 1u) << "the case never called " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(OpenApi, OperationCase, ::testing::ValuesIn(caseIds()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

TEST(OperationCoverage, EveryOperationOfOpenapiHasACase) {
    std::set<std::string> missing, extra;
    for (const auto &op : operations())
        if (cases().count(op.id) == 0) missing.insert(op.id);
    for (const auto &[id, body] : cases()) {
        bool known = false;
        for (const auto &op : operations()) known = known || op.id == id;
        if (!known) extra.insert(id);
    }
    EXPECT_TRUE(missing.empty()) << "operations without a case: " << json(missing).dump();
    EXPECT_TRUE(extra.empty()) << "cases for operations openapi.json does not have: " << json(extra).dump();
    EXPECT_GE(operations().size(), 40u);
}

/** The status and code of the error `call` throws. */
std::pair<int, std::string> failure(const std::function<void()> &call) {
    try {
        call();
    } catch (const SvcRequestError &e) {
        return {e.status(), e.code()};
    }
    return {0, "no error"};
}

TEST(TypedErrors, NoTokenIsUnauthorizedWithItsChallenge) {
    auto client = connect(sharedTestkit(), "rest", "");
    try {
        client->listApps();
        FAIL();
    } catch (const SvcRequestError &e) {
        EXPECT_EQ(e.status(), 401);
        EXPECT_EQ(e.code(), "unauthorized");
        EXPECT_NE(e.headers().at("www-authenticate").find("Bearer"), std::string::npos);
    }
}

TEST(TypedErrors, ABadTokenIsInvalidTokenOnEveryTransport) {
    for (const char *kind : {"rest", "tcp"}) {
        auto client = connect(sharedTestkit(), kind, "");
        client->setBearerToken("not.a.jwt");
        EXPECT_EQ(failure([&] { client->listApps(); }), (std::pair<int, std::string>{401, "invalid_token"})) << kind;
    }
}

TEST(TypedErrors, AViewerMayNotRegister) {
    auto client = connect(sharedTestkit(), "tcp", "svc-viewer");
    EXPECT_EQ(failure([&] { client->addApp({{"name", uniqueName("cpp-no")}, {"command", "true"}}); }).first, 403);
}

TEST(TypedErrors, TheMachineIdentityMayNotRunTasks) {
    auto admin = connect(sharedTestkit(), "rest");
    const auto name = uniqueName("cpp-machine");
    admin->addApp({{"name", name}, {"command", "sleep 60"}, {"shell", true}});
    auto client = connect(sharedTestkit(), "rest", "machine");
    EXPECT_EQ(failure([&] { client->runTask(name, "x", 5); }).first, 403);
    EXPECT_EQ(failure([&] { client->addApp({{"name", uniqueName("cpp-m")}, {"command", "true"}}); }).first, 403);
    admin->deleteApp(name);
}

TEST(TypedErrors, MissingAppInvalidNameUnknownRoute) {
    auto client = connect(sharedTestkit(), "wss");
    EXPECT_EQ(failure([&] { client->getApp("cpp-never-registered"); }), (std::pair<int, std::string>{404, "app_not_found"}));
    EXPECT_EQ(failure([&] { client->getApp("bad name!"); }), (std::pair<int, std::string>{400, "invalid_name"}));
    EXPECT_EQ(failure([&] { client->request("GET", "/svc/no-such-route"); }).first, 404);
}

TEST(TypedErrors, SubscribingOverRestIsRefused) {
    auto client = connect(sharedTestkit(), "rest");
    EXPECT_THROW(client->subscribe("", {"ALL"}, [](const json &) {}), SvcError); // no demultiplexer: refused locally
    EXPECT_EQ(failure([&] { client->request("POST", "/svc/subscribe", {{"events", "ALL"}}); }),
              (std::pair<int, std::string>{405, "persistent_connection_required"}));
}

TEST(TypedErrors, HostileInputsAreRefusedCleanly) {
    auto client = connect(sharedTestkit(), "tcp");
    EXPECT_EQ(failure([&] { client->addApp({{"name", std::string(200, 'a')}, {"command", "true"}}); }).first, 400);
    EXPECT_EQ(failure([&] { client->getAppOutput("x", 0, 0, 0, "", -5); }).first, 404); // negative timeout not sent; no app
    EXPECT_EQ(failure([&] { client->getApp(std::string(129, 'n')); }).first, 400);
    // Over the wire limits: refused before anything is sent (the daemon would close the connection).
    EXPECT_THROW(client->request("GET", "/svc/app/" + std::string(9000, 'x')), WireError);
    EXPECT_THROW(client->request("GET", "/svc/applications", {}, {{"X-Big", std::string(70000, 'b')}}), WireError);
    EXPECT_THROW(client->addApp({{"command", "no name"}}), SvcError);
    EXPECT_THROW(client->addClusterApp("x", json::array()), SvcError);
    EXPECT_THROW(client->addClusterApp("", CLUSTER_TASK), SvcError);
    // A hostile cluster name stays one encoded path segment: refused as a name (not another route).
    EXPECT_EQ(failure([&] { client->getClusterApp("../../applications"); }), (std::pair<int, std::string>{400, "invalid_name"}));
    EXPECT_EQ(failure([&] { client->deleteClusterApp(std::string(129, 'n')); }), (std::pair<int, std::string>{400, "invalid_name"}));
    EXPECT_THROW(client->setBearerToken("x\nInjected: 1"), SvcError);
    // The connection survives all of it.
    EXPECT_TRUE(client->listApps().is_array());
}

TEST(Transport, ADemultiplexedRequestIsNotBoundByAReceiveTimeout) {
    // A long poll of 3 s on TCP and WSS completes (no client-side timer; S1 is the scenario form).
    for (const char *kind : {"tcp", "wss"}) {
        auto client = connect(sharedTestkit(), kind);
        const auto name = uniqueName("cpp-poll");
        client->addApp({{"name", name}, {"command", "sleep 60"}, {"shell", true}});
        const auto started = std::chrono::steady_clock::now();
        const auto chunk = client->getAppOutput(name, 0, 0, 0, "", 3);
        EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(2500)) << kind;
        EXPECT_EQ(chunk.bytes, 0u);
        client->deleteApp(name);
    }
}

TEST(Transport, UntrustedCertificatesAreRefused) {
    auto &kit = sharedTestkit();
    TlsOptions system; // the system store does not hold the test CA
    EXPECT_THROW(ClientHttp(kit.info().at("rest").get<std::string>(), system).getAuthConfig(), SvcConnectionError);
    EXPECT_THROW(ClientTcp("127.0.0.1", kit.info().at("ports").at("tcp").get<int>(), system), SvcConnectionError);
    EXPECT_THROW(ClientWss(kit.info().at("wss").get<std::string>(), system), SvcConnectionError);
}

TEST(Transport, ClosingWakesWaitersWithADisconnect) {
    auto client = connect(sharedTestkit(), "tcp");
    const auto name = uniqueName("cpp-close");
    client->addApp({{"name", name}, {"command", "sleep 60"}, {"shell", true}});
    auto pending = std::async(std::launch::async, [&] { return client->getAppOutput(name, 0, 0, 0, "", 30); });
    ASSERT_TRUE(eventually([&] { return client->transport().demux()->pendingRequests() == 1; }));
    client->close();
    EXPECT_THROW(pending.get(), TransportDisconnectedError);
    EXPECT_THROW(client->listApps(), TransportDisconnectedError);
    connect(sharedTestkit(), "rest")->deleteApp(name);
}

} // namespace
} // namespace svc::test
