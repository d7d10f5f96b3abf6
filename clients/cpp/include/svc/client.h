// The svc client: App Mesh 3.0's C++ SDK surface (ClientHttp) renamed to svc, bearer-only.
//
//   ClientHttp (REST)  ── every operation of spec/openapi.json, run-wait, token setter/clearer
//   ├── ClientTcp      ── the same over TLS TCP (framed msgpack): subscriptions, demultiplexer
//   └── ClientWss      ── the same over WSS (sub-protocol svc-ws)
//
// Bearer-only (spec "Client token contract" rule 5): setBearerToken / clearBearerToken keep the
// token in memory, nothing refreshes it. A token set after a TCP/WSS connection is opened is sent
// with each request; the daemon pins the principal of a connection, so reconnect after a new token.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "svc/errors.h"
#include "svc/transport.h"

namespace svc {

class ClientHttp;

/** One read of GET /svc/app/{name}/output. */
struct AppOutput {
    int statusCode = 0;
    std::string output;
    /** Bytes in `output`. */
    size_t bytes = 0;
    /** Where the next read continues (X-Output-Position). */
    long long outputPosition = 0;
    /** The exit code once the process exited (X-Exit-Code), else null. */
    std::shared_ptr<int> exitCode;
    /** True when the process exited (an exit code may still be unknown). */
    bool exited = false;
    std::string processUuid;
};

/** Options of waitForAsyncRun beyond App Mesh's (timeout seconds, print to stdout). */
struct WaitOptions {
    /** Give up after this long: the result is null, the subscription is removed. 0: no limit. */
    std::chrono::milliseconds timeout{0};
    /** Output of the run, each byte once, in order; `position` is the offset of its first byte. */
    std::function<void(const std::string &output, long long position)> onOutput;
    /** Delete the transient app after an observed exit (default true). */
    bool deleteAfterExit = true;
    /** Called once the run's subscription is in place (tests use it). */
    std::function<void()> onSubscribed;
};

/** A started asynchronous run (POST /svc/app/run). */
struct AppRun {
    AppRun(ClientHttp *client, std::string appName, std::string procUid);
    ClientHttp *m_client;
    std::string m_appName;
    std::string m_procUid;
    /** waitForAsyncRun on the client that started it. */
    std::shared_ptr<int> wait(int timeoutSeconds = 0, bool printToSTD = true);
};

/** A subscription as the daemon answered it. */
struct Subscription {
    std::string subscriptionId;
    std::string appName;
    std::vector<std::string> events;
};

class ClientHttp {
public:
    /** REST client for `url` (the agent or svcd's REST port). */
    explicit ClientHttp(const std::string &url = "https://127.0.0.1:6060", const TlsOptions &tls = {});
    /** A client on any transport (REST, TCP or WSS). */
    explicit ClientHttp(std::unique_ptr<Transport> transport);
    virtual ~ClientHttp();
    ClientHttp(const ClientHttp &) = delete;
    ClientHttp &operator=(const ClientHttp &) = delete;

    // ---- bearer (in memory only) ----
    void setBearerToken(const std::string &token);
    void clearBearerToken();
    bool hasBearerToken() const;
    /** host[:port] of the instance a gateway forwards to (X-Target-Host); empty: none. */
    void forwardTo(const std::string &host = "");
    /** Closes the transport (a persistent one stops its demultiplexer). */
    void close();
    Transport &transport() { return *m_transport; }

    // ---- discovery ----
    nlohmann::json getAuthConfig();
    nlohmann::json getProtectedResourceMetadata();
    nlohmann::json getOpenApi();

    // ---- application view ----
    virtual nlohmann::json getApp(const std::string &app);
    nlohmann::json listApps();
    AppOutput getAppOutput(const std::string &app, long long outputPosition = 0, int stdoutIndex = 0,
                           int stdoutMaxsize = 10240, const std::string &processUuid = "", int timeout = 0);
    bool checkAppHealth(const std::string &app);

    // ---- application manage ----
    /**
     * PUT /svc/app/{name}. With `subscribeEvents` (persistent transports) the registration and
     * the subscription are atomic; `callback` gets the events, `subscription_id` is in the answer.
     */
    nlohmann::json addApp(const nlohmann::json &app, const std::vector<std::string> &subscribeEvents = {},
                          EventCallback callback = nullptr);
    virtual void deleteApp(const std::string &app);
    void enableApp(const std::string &app);
    void disableApp(const std::string &app);

    // ---- runs ----
    /** POST /svc/app/syncrun: (exit code or null, output). */
    std::tuple<std::shared_ptr<int>, std::string> runAppSync(const nlohmann::json &app, int maxTimeout = 60 * 60 * 24,
                                                             int lifeCycleSeconds = 60 * 60 * 24 * 2);
    /** POST /svc/app/run. */
    AppRun runAppAsync(const nlohmann::json &app, int maxTimeout = 60 * 60 * 24, int lifeCycleSeconds = 60 * 60 * 24 * 2);
    /**
     * The run-wait contract (spec "Run-wait contract"), on a persistent transport: the exit code
     * (negative for a signal), or null after `timeoutSeconds` (0: none). Throws AppRemovedError,
     * TransportDisconnectedError.
     */
    std::shared_ptr<int> waitForAsyncRun(const AppRun &run, int timeoutSeconds = 0, bool printToSTD = true);
    std::shared_ptr<int> waitForAsyncRun(const AppRun &run, const WaitOptions &options);

    // ---- tasks (client side; the worker side is svc::SvcWorker) ----
    /** POST /svc/app/{name}/task: the worker's result body. */
    std::string runTask(const std::string &app, const std::string &data, int timeout = 300,
                        const std::string &contentType = "text/plain; charset=utf-8");
    /** DELETE /svc/app/{name}/task. */
    bool cancelTask(const std::string &app);

    // ---- subscriptions (TCP/WSS only; 405 over REST) ----
    /** POST /svc/app/{name}/subscribe, or /svc/subscribe when `app` is empty. */
    Subscription subscribe(const std::string &app, const std::vector<std::string> &events, EventCallback callback);
    /** DELETE /svc/subscribe (or /svc/app/{app}/subscribe when `app` is given). */
    virtual void unsubscribe(const std::string &subscriptionId, const std::string &app = "");

    // ---- files ----
    void downloadFile(const std::string &remoteFile, const std::string &localFile, bool preservePermissions = true);
    void uploadFile(const std::string &localFile, const std::string &remoteFile, bool preservePermissions = true);

    // ---- host ----
    nlohmann::json getHostResources();
    nlohmann::json getConfig();
    nlohmann::json setConfig(const nlohmann::json &config);
    /** Sets BaseConfig.LogLevel; answers the level now in effect. */
    std::string setLogLevel(const std::string &level);
    std::string getMetrics();
    nlohmann::json listLabels();
    void addLabel(const std::string &label, const std::string &value);
    void deleteLabel(const std::string &label);

    // ---- cluster (/svc/cluster/*; a stand-alone daemon answers 404 not_found) ----
    /** GET /svc/cluster/applications: app name -> task plus `placements` [{host, schedule_time}]. */
    nlohmann::json listClusterApps();
    /** GET /svc/cluster/app/{name}: the task plus `placements`. */
    nlohmann::json getClusterApp(const std::string &app);
    /**
     * PUT /svc/cluster/app/{name}: `task` is {replication, port, memoryMB, condition, content}
     * (content.name, if given, equals `app`).
     */
    nlohmann::json addClusterApp(const std::string &app, const nlohmann::json &task);
    /** DELETE /svc/cluster/app/{name}. */
    void deleteClusterApp(const std::string &app);
    /** GET /svc/cluster/nodes: the registered nodes' reports. */
    nlohmann::json listClusterNodes();
    /** GET /svc/cluster/topology: host -> the entries scheduled on it. */
    nlohmann::json getClusterTopology();

    // ---- authorization ----
    nlohmann::json getCurrentPrincipal();
    std::set<std::string> getPrincipalPermissions();
    std::set<std::string> listPermissions();
    std::map<std::string, std::set<std::string>> listRoles();
    void updateRole(const std::string &role, const std::set<std::string> &rolePermissions);
    void deleteRole(const std::string &role);
    /** Object keyed by principal id. */
    nlohmann::json listPrincipals();
    void updatePrincipal(const std::string &principalId, const nlohmann::json &principal);
    void deletePrincipal(const std::string &principalId);

    /**
     * One call with the bearer and X-Target-Host; a status outside 2xx (and not in `accept`)
     * throws SvcRequestError. For paths this class has no method for.
     */
    WireResult request(const std::string &method, const std::string &path, const wire::StringMap &query = {},
                       const wire::StringMap &headers = {}, const std::string &body = "",
                       const std::vector<int> &accept = {});
    nlohmann::json requestJson(const std::string &method, const std::string &path, const wire::StringMap &query = {},
                               const nlohmann::json *body = nullptr);

    /** Percent-encodes one path segment. */
    static std::string segment(const std::string &value);

private:
    Demultiplexer &persistent(const char *what);

    std::unique_ptr<Transport> m_transport;
    mutable std::mutex m_mutex;
    std::optional<std::string> m_token;
    std::string m_forwardTo;
};

/** ClientHttp over the TLS TCP transport. */
class ClientTcp : public ClientHttp {
public:
    ClientTcp(const std::string &host = "127.0.0.1", int port = 6059, const TlsOptions &tls = {});
};

/** ClientHttp over WSS; the bearer is sent at the upgrade too (reconnect after a new token). */
class ClientWss : public ClientHttp {
public:
    ClientWss(const std::string &url, const TlsOptions &tls = {}, const std::string &bearer = "");
};

} // namespace svc
