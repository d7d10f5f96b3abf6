#include "support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

namespace svc::test {

Testkit::Testkit() {
    const char *raw = std::getenv("SVC_TESTKIT_COMMAND");
    if (raw == nullptr || *raw == '\0')
        throw std::runtime_error("SVC_TESTKIT_COMMAND is not set (a JSON array: node, svc-testkit.js, serve, --json)");
    const auto command = nlohmann::json::parse(raw);
    if (!command.is_array() || command.empty()) throw std::runtime_error("SVC_TESTKIT_COMMAND is not a JSON array");
    std::vector<std::string> args;
    for (const auto &arg : command) args.push_back(arg.get<std::string>());
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    m_pid = fork();
    if (m_pid < 0) throw std::runtime_error("fork failed");
    if (m_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        std::vector<char *> argv;
        for (auto &arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        _exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    m_stdin = in[1];
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    ::close(out[0]);
    if (line.empty()) throw std::runtime_error("svc-testkit printed no line (see its stderr)");
    m_info = nlohmann::json::parse(line);
}

Testkit::~Testkit() {
    if (m_stdin >= 0) ::close(m_stdin); // end of stdin stops the testkit and everything it started
    if (m_pid > 0) {
        int status = 0;
        waitpid(m_pid, &status, 0);
    }
}

std::string Testkit::token(const std::string &role) const { return m_info.at("tokens").at(role).get<std::string>(); }

TlsOptions Testkit::tls() const {
    TlsOptions tls;
    tls.caFile = m_info.at("ca").get<std::string>();
    return tls;
}

void Testkit::killDaemon() { ::kill(static_cast<pid_t>(m_info.at("pid").get<int>()), SIGKILL); }

Testkit &sharedTestkit() {
    static Testkit kit;
    return kit;
}

nlohmann::json loadSpec(const std::string &relativePath) {
    const std::string path = std::string(SVC_SPEC_DIR) + "/" + relativePath;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return nlohmann::json::parse(in);
}

std::unique_ptr<Transport> openTransport(Testkit &kit, const std::string &kind, const std::string &role) {
    const auto &info = kit.info();
    if (kind == "rest") return makeRestTransport(info.at("rest").get<std::string>(), kit.tls());
    if (kind == "tcp") return connectTcpTransport("127.0.0.1", info.at("ports").at("tcp").get<int>(), kit.tls());
    if (kind == "wss")
        return connectWssTransport(info.at("wss").get<std::string>(), kit.tls(), role.empty() ? "" : kit.token(role));
    throw std::runtime_error("unknown transport " + kind);
}

std::unique_ptr<ClientHttp> connect(Testkit &kit, const std::string &kind, const std::string &role) {
    auto client = std::make_unique<ClientHttp>(openTransport(kit, kind, role));
    if (!role.empty()) client->setBearerToken(kit.token(role));
    return client;
}

std::string uniqueName(const std::string &prefix) {
    static std::atomic<int> counter{0};
    return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
}

bool eventually(const std::function<bool()> &condition, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        if (condition()) return true;
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

} // namespace svc::test
