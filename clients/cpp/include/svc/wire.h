// Wire messages of the TCP and WSS transports (spec/contract.md §4, spec/wire-vectors.json):
// msgpack maps encoded and decoded with msgpack-cxx, and the TCP framing
//   [magic 0x07C707F8 big-endian][body length uint32 big-endian][msgpack body].
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace svc::wire {

using Bytes = std::string; // raw bytes (may hold any byte, including NUL)
using StringMap = std::map<std::string, std::string>;

constexpr uint32_t FRAME_MAGIC = 0x07C707F8;
constexpr size_t FRAME_HEADER_BYTES = 8;
/** A client rejects frames announcing more than this (spec "Limits"). */
constexpr uint64_t CLIENT_MAX_BODY_BYTES = 1ULL << 30;
constexpr size_t MAX_UUID_CHARS = 128;
constexpr size_t MAX_REQUEST_URI_BYTES = 8 * 1024;
constexpr size_t MAX_HEADERS = 256;
constexpr size_t MAX_HEADER_VALUE_BYTES = 64 * 1024;
/** request_uri of a server push. */
inline const char *const EVENT_REQUEST_URI = "/svc/event";

struct Request {
    std::string uuid;
    std::string request_uri;
    std::string http_method;
    std::string client_addr;
    StringMap headers;
    StringMap query;
    Bytes body;
};

struct Response {
    std::string uuid;
    std::string request_uri;
    int http_status = 0;
    std::string body_msg_type;
    StringMap headers;
    Bytes body;
};

/** Canonical encoding: keys in §4 order, smallest header forms, body as bin. */
Bytes encodeRequest(const Request &request);
Bytes encodeResponse(const Response &response);
/** Exactly one msgpack map; throws svc::WireError with the vector's category and field. */
Request decodeRequest(const Bytes &bytes);
Response decodeResponse(const Bytes &bytes);

/** One frame: header plus body. Throws WireError(too_large) above maxBodyBytes. */
Bytes encodeFrame(const Bytes &body, uint64_t maxBodyBytes = CLIENT_MAX_BODY_BYTES);

/**
 * Incremental frame decoder: push() any chunking of the stream, get complete bodies in order.
 * Fails (WireError bad_magic / too_large) from the header alone; buffered() > 0 at the end of a
 * stream means a truncated frame.
 */
class FrameDecoder {
public:
    explicit FrameDecoder(uint64_t maxBodyBytes = CLIENT_MAX_BODY_BYTES) : m_max(maxBodyBytes) {}
    /** Appends the complete bodies to `out` (also those before a failure), then throws on a bad header. */
    void push(const char *data, size_t size, std::vector<Bytes> &out);
    size_t buffered() const noexcept { return m_buffer.size(); }

private:
    uint64_t m_max;
    Bytes m_buffer;
    bool m_failed = false;
};

/** A random RFC 4122 version 4 uuid (OpenSSL's RAND_bytes). */
std::string randomUuid();

} // namespace svc::wire
