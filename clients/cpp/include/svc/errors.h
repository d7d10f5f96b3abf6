// Errors of the svc C++ client. Every error the library throws derives from svc::SvcError.
//
//   SvcError (std::runtime_error)
//   ├── SvcRequestError              a non-2xx answer: status(), code() from spec/errors.json, headers()
//   ├── SvcConnectionError           connecting, TLS or a REST exchange failed
//   │   └── TransportDisconnectedError   the persistent transport (TCP/WSS) is gone: a connection error, never a timeout
//   ├── SvcCancelledError            a call given up because its cancellation flag turned true
//   ├── AppRemovedError              waitForAsyncRun: the app was removed before its exit was observed
//   ├── ProcessSupersededError       worker loop: 412, the process key belongs to a superseded process
//   ├── WorkerRejectedError          worker loop: 400, permanent rejection (never retried)
//   ├── WorkerEnvironmentError       worker loop: SVC_PROCESS_KEY / SVC_APPLICATION_NAME / SVC_DAEMON_URL missing
//   └── WireError                    a malformed msgpack message or TCP frame (category(), field())
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace svc {

class SvcError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/** A non-2xx answer of the daemon: body {"error": code, "message": text}. */
class SvcRequestError : public SvcError {
public:
    SvcRequestError(int status, std::string code, const std::string &message,
                    std::map<std::string, std::string> headers = {});
    int status() const noexcept { return m_status; }
    /** The registry code of spec/errors.json, or "http_<status>" when the body named none. */
    const std::string &code() const noexcept { return m_code; }
    /** Response headers, names in lower case. */
    const std::map<std::string, std::string> &headers() const noexcept { return m_headers; }

    /** The error for a non-2xx answer, parsed from its raw body. */
    static SvcRequestError fromResponse(int status, const std::string &body,
                                        std::map<std::string, std::string> headers = {});

private:
    int m_status;
    std::string m_code;
    std::map<std::string, std::string> m_headers;
};

class SvcConnectionError : public SvcError {
public:
    using SvcError::SvcError;
};

class TransportDisconnectedError : public SvcConnectionError {
public:
    using SvcConnectionError::SvcConnectionError;
};

/** A call given up because its cancellation flag was set. */
class SvcCancelledError : public SvcError {
public:
    using SvcError::SvcError;
};

class AppRemovedError : public SvcError {
public:
    explicit AppRemovedError(const std::string &appName);
    const std::string &appName() const noexcept { return m_appName; }

private:
    std::string m_appName;
};

class ProcessSupersededError : public SvcError {
public:
    using SvcError::SvcError;
};

class WorkerRejectedError : public SvcError {
public:
    using SvcError::SvcError;
};

class WorkerEnvironmentError : public SvcError {
public:
    using SvcError::SvcError;
};

/** A malformed wire message or frame; category() is the one of spec/wire-vectors.json. */
class WireError : public SvcError {
public:
    WireError(std::string category, std::string field, const std::string &message);
    const std::string &category() const noexcept { return m_category; }
    const std::string &field() const noexcept { return m_field; }

private:
    std::string m_category;
    std::string m_field;
};

} // namespace svc
