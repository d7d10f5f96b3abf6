// Transports: one call() shape over REST (libcurl), TCP (Boost.Asio + OpenSSL, framed msgpack)
// and WSS (Boost.Beast, one msgpack message per binary frame). TCP and WSS are persistent: one
// reader thread feeds a Demultiplexer, which matches answers to calls and routes server pushes.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "svc/demux.h"
#include "svc/wire.h"

namespace svc {

struct WireCall {
    std::string method;
    std::string path; // already percent-encoded
    wire::StringMap query;
    wire::StringMap headers;
    wire::Bytes body;
    /** Optional: when it turns true the call gives up with SvcCancelledError (worker loop). */
    const std::atomic<bool> *cancel = nullptr;
};

struct WireResult {
    int status = 0;
    wire::StringMap headers; // names in lower case
    std::string contentType;
    wire::Bytes body;
};

struct TlsOptions {
    /** PEM file of the CA that signed the daemon's certificate; empty: the system's trust store. */
    std::string caFile;
    /** Verify the daemon's certificate and host name (default true). */
    bool verify = true;
};

class Transport {
public:
    virtual ~Transport() = default;
    /** "rest", "tcp" or "wss". */
    virtual std::string kind() const = 0;
    /** One exchange. Throws SvcConnectionError (TransportDisconnectedError when persistent). */
    virtual WireResult call(const WireCall &call) = 0;
    virtual void close() = 0;
    /** The demultiplexer of a persistent transport; nullptr for REST. */
    virtual Demultiplexer *demux() { return nullptr; }
    /** Persistent transports: waits until the connection is closed; true when it is. */
    virtual bool waitClosed(std::chrono::milliseconds) { return true; }
};

/** REST over HTTPS: `baseUrl` such as https://127.0.0.1:6060. */
std::unique_ptr<Transport> makeRestTransport(const std::string &baseUrl, const TlsOptions &tls = {});
/** TLS TCP transport (framed msgpack) to host:port. */
std::unique_ptr<Transport> connectTcpTransport(const std::string &host, int port, const TlsOptions &tls = {},
                                               uint64_t maxBodyBytes = wire::CLIENT_MAX_BODY_BYTES);
/**
 * WSS transport to wss://host:port[/path] (https:// is accepted), sub-protocol svc-ws. The bearer
 * (and X-Target-Host) go with the upgrade; a new token needs a new connection.
 */
std::unique_ptr<Transport> connectWssTransport(const std::string &url, const TlsOptions &tls = {},
                                               const std::string &bearer = "", const std::string &targetHost = "",
                                               uint64_t maxBodyBytes = wire::CLIENT_MAX_BODY_BYTES);

/** Splits "https://host:port/path" into its parts; throws SvcError on a malformed URL. */
struct ParsedUrl {
    std::string scheme, host, path;
    int port = 0;
};
ParsedUrl parseUrl(const std::string &url);

} // namespace svc
