#include "svc/client.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace svc {
namespace {

const char *const JSON_TYPE = "application/json";

std::string join(const std::vector<std::string> &items) {
    std::string out;
    for (const auto &item : items) out += (out.empty() ? "" : ",") + item;
    return out;
}

nlohmann::json parseJson(const WireResult &result) {
    if (result.body.empty()) return nlohmann::json::object();
    auto parsed = nlohmann::json::parse(result.body, nullptr, false);
    if (parsed.is_discarded()) throw SvcError("the daemon answered a body that is not JSON");
    return parsed;
}

std::string header(const WireResult &result, const std::string &name) {
    const auto it = result.headers.find(name);
    return it == result.headers.end() ? "" : it->second;
}

std::shared_ptr<int> intHeader(const WireResult &result, const std::string &name) {
    const std::string value = header(result, name);
    if (value.empty()) return nullptr;
    try {
        size_t used = 0;
        const int parsed = std::stoi(value, &used);
        if (used != value.size()) return nullptr;
        return std::make_shared<int>(parsed);
    } catch (const std::exception &) {
        return nullptr;
    }
}

std::set<std::string> stringSet(const nlohmann::json &json) {
    std::set<std::string> out;
    if (json.is_array())
        for (const auto &item : json)
            if (item.is_string()) out.insert(item.get<std::string>());
    return out;
}

std::string readFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SvcError("cannot read local file " + path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

AppRun::AppRun(ClientHttp *client, std::string appName, std::string procUid)
    : m_client(client), m_appName(std::move(appName)), m_procUid(std::move(procUid)) {}

std::shared_ptr<int> AppRun::wait(int timeoutSeconds, bool printToSTD) {
    return m_client->waitForAsyncRun(*this, timeoutSeconds, printToSTD);
}

ClientHttp::ClientHttp(const std::string &url, const TlsOptions &tls) : m_transport(makeRestTransport(url, tls)) {}

ClientHttp::ClientHttp(std::unique_ptr<Transport> transport) : m_transport(std::move(transport)) {
    if (!m_transport) throw SvcError("ClientHttp needs a transport");
}

ClientHttp::~ClientHttp() {
    try {
        m_transport->close();
    } catch (...) {
        // closing is best effort in a destructor
    }
}

void ClientHttp::setBearerToken(const std::string &token) {
    if (token.empty() || token.find_first_of("\r\n") != std::string::npos)
        throw SvcError("a bearer token must be one non-empty line");
    std::lock_guard<std::mutex> lock(m_mutex);
    m_token = token;
}

void ClientHttp::clearBearerToken() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_token.reset();
}

bool ClientHttp::hasBearerToken() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_token.has_value();
}

void ClientHttp::forwardTo(const std::string &host) {
    if (host.find_first_of("\r\n") != std::string::npos) throw SvcError("bad forward target");
    std::lock_guard<std::mutex> lock(m_mutex);
    m_forwardTo = host;
}

void ClientHttp::close() { m_transport->close(); }

std::string ClientHttp::segment(const std::string &value) {
    static const char *hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out.push_back(static_cast<char>(c));
        else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0x0F]);
        }
    }
    return out;
}

WireResult ClientHttp::request(const std::string &method, const std::string &path, const wire::StringMap &query,
                               const wire::StringMap &headers, const std::string &body, const std::vector<int> &accept) {
    WireCall call{method, path, query, headers, body};
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_token) call.headers["Authorization"] = "Bearer " + *m_token;
        if (!m_forwardTo.empty()) call.headers["X-Target-Host"] = m_forwardTo;
    }
    WireResult result = m_transport->call(call);
    const bool ok = result.status >= 200 && result.status <= 299;
    if (!ok && std::find(accept.begin(), accept.end(), result.status) == accept.end())
        throw SvcRequestError::fromResponse(result.status, result.body, result.headers);
    return result;
}

nlohmann::json ClientHttp::requestJson(const std::string &method, const std::string &path, const wire::StringMap &query,
                                       const nlohmann::json *body) {
    wire::StringMap headers;
    std::string text;
    if (body != nullptr) {
        headers["Content-Type"] = JSON_TYPE;
        text = body->dump();
    }
    return parseJson(request(method, path, query, headers, text));
}

Demultiplexer &ClientHttp::persistent(const char *what) {
    Demultiplexer *demux = m_transport->demux();
    if (demux == nullptr) throw SvcError(std::string(what) + " needs a persistent transport (TCP or WSS)");
    return *demux;
}

// ---- discovery ----
nlohmann::json ClientHttp::getAuthConfig() { return requestJson("GET", "/svc/auth/config"); }
nlohmann::json ClientHttp::getProtectedResourceMetadata() {
    return requestJson("GET", "/.well-known/oauth-protected-resource");
}
nlohmann::json ClientHttp::getOpenApi() { return requestJson("GET", "/openapi.json"); }

// ---- application view ----
nlohmann::json ClientHttp::getApp(const std::string &app) { return requestJson("GET", "/svc/app/" + segment(app)); }
nlohmann::json ClientHttp::listApps() { return requestJson("GET", "/svc/applications"); }

AppOutput ClientHttp::getAppOutput(const std::string &app, long long outputPosition, int stdoutIndex, int stdoutMaxsize,
                                   const std::string &processUuid, int timeout) {
    wire::StringMap query{{"stdout_position", std::to_string(outputPosition)}};
    if (stdoutIndex != 0) query["stdout_index"] = std::to_string(stdoutIndex);
    if (stdoutMaxsize > 0) query["stdout_maxsize"] = std::to_string(stdoutMaxsize);
    if (!processUuid.empty()) query["process_uuid"] = processUuid;
    if (timeout > 0) query["timeout"] = std::to_string(timeout);
    const WireResult result = request("GET", "/svc/app/" + segment(app) + "/output", query);
    AppOutput out;
    out.statusCode = result.status;
    out.output = result.body;
    out.bytes = result.body.size();
    const auto next = intHeader(result, "x-output-position");
    out.outputPosition = next ? *next : outputPosition + static_cast<long long>(result.body.size());
    out.exitCode = intHeader(result, "x-exit-code");
    out.exited = out.exitCode != nullptr || header(result, "x-exited") == "true";
    out.processUuid = header(result, "x-process-uuid");
    return out;
}

bool ClientHttp::checkAppHealth(const std::string &app) {
    const WireResult result = request("GET", "/svc/app/" + segment(app) + "/health", {}, {}, "", {503});
    std::string text = result.body;
    text.erase(text.find_last_not_of(" \t\r\n") + 1);
    return result.status == 200 && text == "0";
}

// ---- application manage ----
nlohmann::json ClientHttp::addApp(const nlohmann::json &app, const std::vector<std::string> &subscribeEvents,
                                  EventCallback callback) {
    if (!app.is_object() || !app.contains("name") || !app["name"].is_string())
        throw SvcError("addApp: the application needs a string name");
    wire::StringMap query;
    Demultiplexer *demux = nullptr;
    if (!subscribeEvents.empty()) {
        if (!callback) throw SvcError("addApp: subscribeEvents needs a callback");
        demux = &persistent("addApp with subscribeEvents");
        query["subscribe_events"] = join(subscribeEvents);
    }
    nlohmann::json answer = requestJson("PUT", "/svc/app/" + segment(app["name"].get<std::string>()), query, &app);
    if (demux != nullptr && answer.contains("subscription_id") && answer["subscription_id"].is_string())
        demux->registerCallback(answer["subscription_id"].get<std::string>(), std::move(callback));
    return answer;
}

void ClientHttp::deleteApp(const std::string &app) { request("DELETE", "/svc/app/" + segment(app)); }
void ClientHttp::enableApp(const std::string &app) { request("POST", "/svc/app/" + segment(app) + "/enable"); }
void ClientHttp::disableApp(const std::string &app) { request("POST", "/svc/app/" + segment(app) + "/disable"); }

// ---- runs ----
std::tuple<std::shared_ptr<int>, std::string> ClientHttp::runAppSync(const nlohmann::json &app, int maxTimeout,
                                                                     int lifeCycleSeconds) {
    const WireResult result =
        request("POST", "/svc/app/syncrun",
                {{"timeout", std::to_string(maxTimeout)}, {"lifecycle", std::to_string(lifeCycleSeconds)}},
                {{"Content-Type", JSON_TYPE}}, app.dump());
    return {intHeader(result, "x-exit-code"), result.body};
}

AppRun ClientHttp::runAppAsync(const nlohmann::json &app, int maxTimeout, int lifeCycleSeconds) {
    const nlohmann::json answer = requestJson(
        "POST", "/svc/app/run", {{"timeout", std::to_string(maxTimeout)}, {"lifecycle", std::to_string(lifeCycleSeconds)}},
        &app);
    return AppRun(this, answer.value("name", ""), answer.value("process_uuid", ""));
}

std::shared_ptr<int> ClientHttp::waitForAsyncRun(const AppRun &run, int timeoutSeconds, bool printToSTD) {
    WaitOptions options;
    options.timeout = std::chrono::seconds(timeoutSeconds > 0 ? timeoutSeconds : 0);
    if (printToSTD)
        options.onOutput = [](const std::string &output, long long) {
            std::fwrite(output.data(), 1, output.size(), stdout);
            std::fflush(stdout);
        };
    return waitForAsyncRun(run, options);
}

// ---- tasks ----
std::string ClientHttp::runTask(const std::string &app, const std::string &data, int timeout,
                                const std::string &contentType) {
    wire::StringMap query;
    if (timeout > 0) query["timeout"] = std::to_string(timeout);
    return request("POST", "/svc/app/" + segment(app) + "/task", query, {{"Content-Type", contentType}}, data).body;
}

bool ClientHttp::cancelTask(const std::string &app) {
    const auto answer = requestJson("DELETE", "/svc/app/" + segment(app) + "/task");
    return answer.contains("cancelled") && answer["cancelled"].is_array() && !answer["cancelled"].empty();
}

// ---- subscriptions ----
Subscription ClientHttp::subscribe(const std::string &app, const std::vector<std::string> &events,
                                   EventCallback callback) {
    if (!callback) throw SvcError("subscribe needs a callback");
    Demultiplexer &demux = persistent("subscribe");
    const std::string path = app.empty() ? "/svc/subscribe" : "/svc/app/" + segment(app) + "/subscribe";
    const nlohmann::json answer = requestJson("POST", path, {{"events", join(events)}});
    Subscription subscription;
    subscription.subscriptionId = answer.value("subscription_id", "");
    subscription.appName = answer.value("app_name", "");
    if (answer.contains("events") && answer["events"].is_array())
        for (const auto &event : answer["events"])
            if (event.is_string()) subscription.events.push_back(event.get<std::string>());
    if (subscription.subscriptionId.empty()) throw SvcError("the daemon answered a subscription without an id");
    demux.registerCallback(subscription.subscriptionId, std::move(callback));
    return subscription;
}

void ClientHttp::unsubscribe(const std::string &subscriptionId, const std::string &app) {
    persistent("unsubscribe").unregisterCallback(subscriptionId);
    const std::string path = app.empty() ? "/svc/subscribe" : "/svc/app/" + segment(app) + "/subscribe";
    request("DELETE", path, {{"subscription_id", subscriptionId}});
}

// ---- files ----
void ClientHttp::downloadFile(const std::string &remoteFile, const std::string &localFile, bool preservePermissions) {
    const WireResult result = request("GET", "/svc/file/download", {}, {{"X-File-Path", segment(remoteFile)}});
    const std::string temp = localFile + ".part";
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) throw SvcError("cannot write local file " + localFile);
        out.write(result.body.data(), static_cast<std::streamsize>(result.body.size()));
        if (!out) throw SvcError("cannot write local file " + localFile);
    }
    if (std::rename(temp.c_str(), localFile.c_str()) != 0) throw SvcError("cannot write local file " + localFile);
    const auto mode = intHeader(result, "x-file-mode");
    if (preservePermissions && mode && *mode >= 0 && *mode <= 07777) ::chmod(localFile.c_str(), static_cast<mode_t>(*mode));
}

void ClientHttp::uploadFile(const std::string &localFile, const std::string &remoteFile, bool preservePermissions) {
    const std::string content = readFile(localFile);
    wire::StringMap headers{{"X-File-Path", segment(remoteFile)}, {"Content-Type", "application/octet-stream"}};
    struct stat info {};
    if (preservePermissions && ::stat(localFile.c_str(), &info) == 0)
        headers["X-File-Mode"] = std::to_string(info.st_mode & 07777);
    request("POST", "/svc/file/upload", {}, headers, content);
}

// ---- host ----
nlohmann::json ClientHttp::getHostResources() { return requestJson("GET", "/svc/resources"); }
nlohmann::json ClientHttp::getConfig() { return requestJson("GET", "/svc/config"); }
nlohmann::json ClientHttp::setConfig(const nlohmann::json &config) { return requestJson("POST", "/svc/config", {}, &config); }

std::string ClientHttp::setLogLevel(const std::string &level) {
    const nlohmann::json change{{"BaseConfig", {{"LogLevel", level}}}};
    const nlohmann::json answer = setConfig(change);
    const auto base = answer.find("BaseConfig");
    if (base != answer.end() && base->is_object() && base->contains("LogLevel") && (*base)["LogLevel"].is_string())
        return (*base)["LogLevel"].get<std::string>();
    return level;
}

std::string ClientHttp::getMetrics() { return request("GET", "/svc/metrics").body; }
nlohmann::json ClientHttp::listLabels() { return requestJson("GET", "/svc/labels"); }
void ClientHttp::addLabel(const std::string &label, const std::string &value) {
    request("PUT", "/svc/label/" + segment(label), {{"value", value}});
}
void ClientHttp::deleteLabel(const std::string &label) { request("DELETE", "/svc/label/" + segment(label)); }

// ---- cluster ----
nlohmann::json ClientHttp::listClusterApps() { return requestJson("GET", "/svc/cluster/applications"); }
nlohmann::json ClientHttp::getClusterApp(const std::string &app) {
    return requestJson("GET", "/svc/cluster/app/" + segment(app));
}
nlohmann::json ClientHttp::addClusterApp(const std::string &app, const nlohmann::json &task) {
    if (app.empty()) throw SvcError("addClusterApp: the cluster application needs a name");
    if (!task.is_object()) throw SvcError("addClusterApp: the task must be a JSON object");
    return requestJson("PUT", "/svc/cluster/app/" + segment(app), {}, &task);
}
void ClientHttp::deleteClusterApp(const std::string &app) { request("DELETE", "/svc/cluster/app/" + segment(app)); }
nlohmann::json ClientHttp::listClusterNodes() { return requestJson("GET", "/svc/cluster/nodes"); }
nlohmann::json ClientHttp::getClusterTopology() { return requestJson("GET", "/svc/cluster/topology"); }

// ---- authorization ----
nlohmann::json ClientHttp::getCurrentPrincipal() { return requestJson("GET", "/svc/principal/self"); }
std::set<std::string> ClientHttp::getPrincipalPermissions() {
    return stringSet(requestJson("GET", "/svc/principal/self/permissions"));
}
std::set<std::string> ClientHttp::listPermissions() { return stringSet(requestJson("GET", "/svc/permissions")); }

std::map<std::string, std::set<std::string>> ClientHttp::listRoles() {
    std::map<std::string, std::set<std::string>> out;
    const nlohmann::json roles = requestJson("GET", "/svc/roles");
    if (roles.is_object())
        for (const auto &[name, permissions] : roles.items()) out[name] = stringSet(permissions);
    return out;
}

void ClientHttp::updateRole(const std::string &role, const std::set<std::string> &rolePermissions) {
    const nlohmann::json body = rolePermissions;
    requestJson("POST", "/svc/role/" + segment(role), {}, &body);
}
void ClientHttp::deleteRole(const std::string &role) { request("DELETE", "/svc/role/" + segment(role)); }
nlohmann::json ClientHttp::listPrincipals() { return requestJson("GET", "/svc/principals"); }
void ClientHttp::updatePrincipal(const std::string &principalId, const nlohmann::json &principal) {
    requestJson("POST", "/svc/principal/" + segment(principalId), {}, &principal);
}
void ClientHttp::deletePrincipal(const std::string &principalId) {
    request("DELETE", "/svc/principal/" + segment(principalId));
}

ClientTcp::ClientTcp(const std::string &host, int port, const TlsOptions &tls)
    : ClientHttp(connectTcpTransport(host, port, tls)) {}

ClientWss::ClientWss(const std::string &url, const TlsOptions &tls, const std::string &bearer)
    : ClientHttp(connectWssTransport(url, tls, bearer)) {
    if (!bearer.empty()) setBearerToken(bearer);
}

} // namespace svc
