// Test support: the real test daemon (svc-testkit serve, from SVC_TESTKIT_COMMAND), spec files,
// clients on each transport.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "svc/client.h"

namespace svc::test {

/** One `svc-testkit serve --json` process; it stops when its stdin pipe closes (destructor). */
class Testkit {
public:
    /** Starts the command of SVC_TESTKIT_COMMAND (a JSON array); throws when unset or failing. */
    Testkit();
    ~Testkit();
    Testkit(const Testkit &) = delete;
    Testkit &operator=(const Testkit &) = delete;

    const nlohmann::json &info() const { return m_info; }
    std::string token(const std::string &role = "svc-admin") const;
    TlsOptions tls() const;
    /** SIGKILL the daemon (svcd) itself. */
    void killDaemon();

private:
    pid_t m_pid = -1;
    int m_stdin = -1;
    nlohmann::json m_info;
};

/** The shared daemon of this test process, started on first use. */
Testkit &sharedTestkit();

/** A JSON file under spec/. */
nlohmann::json loadSpec(const std::string &relativePath);

/** A client on `kind` ("rest", "tcp", "wss") with the token of `role` (empty: none). */
std::unique_ptr<ClientHttp> connect(Testkit &kit, const std::string &kind, const std::string &role = "svc-admin");
std::unique_ptr<Transport> openTransport(Testkit &kit, const std::string &kind, const std::string &role = "svc-admin");

/** A name unique in this test run, for apps. */
std::string uniqueName(const std::string &prefix);

/** Polls `condition` every 20 ms until true or `seconds` passed; returns its last value. */
bool eventually(const std::function<bool()> &condition, double seconds = 30);

} // namespace svc::test
