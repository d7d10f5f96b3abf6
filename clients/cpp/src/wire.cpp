#include "svc/wire.h"

#include <msgpack.hpp>
#include <openssl/rand.h>

#include <cstdio>

#include "svc/errors.h"

namespace svc::wire {
namespace {

[[noreturn]] void fail(const std::string &category, const std::string &field, const std::string &message) {
    throw WireError(category, field, message);
}

msgpack::object_handle unpackOne(const Bytes &bytes) {
    if (bytes.empty()) fail("invalid_msgpack", "", "empty message");
    std::size_t offset = 0;
    msgpack::object_handle handle;
    try {
        handle = msgpack::unpack(bytes.data(), bytes.size(), offset);
    } catch (const std::exception &error) {
        fail("invalid_msgpack", "", std::string("not one msgpack value: ") + error.what());
    }
    if (offset != bytes.size()) fail("invalid_msgpack", "", "trailing bytes after the message");
    if (handle.get().type != msgpack::type::MAP) fail("not_a_map", "", "the message is not a map");
    return handle;
}

std::string asString(const msgpack::object &object) {
    return std::string(object.via.str.ptr, object.via.str.size);
}

size_t utf8Chars(const std::string &text) {
    size_t count = 0;
    for (unsigned char c : text)
        if ((c & 0xC0) != 0x80) ++count;
    return count;
}

/** The map's values by string key (unknown and non-string keys are ignored; nil counts as absent). */
std::map<std::string, const msgpack::object *> fields(const msgpack::object &map) {
    std::map<std::string, const msgpack::object *> out;
    for (uint32_t i = 0; i < map.via.map.size; ++i) {
        const auto &kv = map.via.map.ptr[i];
        if (kv.key.type != msgpack::type::STR) continue;
        if (kv.val.type == msgpack::type::NIL) continue;
        out[asString(kv.key)] = &kv.val;
    }
    return out;
}

const msgpack::object *find(const std::map<std::string, const msgpack::object *> &f, const char *key) {
    const auto it = f.find(key);
    return it == f.end() ? nullptr : it->second;
}

std::string requiredString(const std::map<std::string, const msgpack::object *> &f, const char *key) {
    const auto *value = find(f, key);
    if (value == nullptr) fail("missing_field", key, std::string("\"") + key + "\" is missing");
    if (value->type != msgpack::type::STR) fail("wrong_type", key, std::string("\"") + key + "\" is not a string");
    return asString(*value);
}

std::string optionalString(const std::map<std::string, const msgpack::object *> &f, const char *key) {
    const auto *value = find(f, key);
    if (value == nullptr) return "";
    if (value->type != msgpack::type::STR) fail("wrong_type", key, std::string("\"") + key + "\" is not a string");
    return asString(*value);
}

StringMap stringMap(const std::map<std::string, const msgpack::object *> &f, const char *key) {
    StringMap out;
    const auto *value = find(f, key);
    if (value == nullptr) return out;
    if (value->type != msgpack::type::MAP) fail("wrong_type", key, std::string("\"") + key + "\" is not a map");
    const auto &map = value->via.map;
    if (map.size > MAX_HEADERS)
        fail("limit_exceeded", key, std::string("\"") + key + "\" has more than " + std::to_string(MAX_HEADERS) + " entries");
    for (uint32_t i = 0; i < map.size; ++i) {
        const auto &kv = map.ptr[i];
        if (kv.key.type != msgpack::type::STR) fail("wrong_type", key, std::string("a \"") + key + "\" name is not a string");
        const std::string name = asString(kv.key);
        const std::string field = std::string(key) + "." + name;
        if (kv.val.type != msgpack::type::STR) fail("wrong_type", field, "\"" + field + "\" is not a string");
        if (name.size() > MAX_HEADER_VALUE_BYTES) fail("limit_exceeded", key, std::string("a \"") + key + "\" name is too long");
        if (kv.val.via.str.size > MAX_HEADER_VALUE_BYTES) fail("limit_exceeded", field, "\"" + field + "\" is too long");
        out[name] = asString(kv.val);
    }
    return out;
}

Bytes body(const std::map<std::string, const msgpack::object *> &f) {
    const auto *value = find(f, "body");
    if (value == nullptr) return "";
    if (value->type == msgpack::type::BIN) return Bytes(value->via.bin.ptr, value->via.bin.size);
    if (value->type == msgpack::type::STR) return asString(*value);
    fail("wrong_type", "body", "\"body\" is neither bin nor str");
}

void checkCommon(const std::string &uuid, const std::string &uri) {
    if (utf8Chars(uuid) > MAX_UUID_CHARS) fail("limit_exceeded", "uuid", "\"uuid\" is too long");
    if (uri.size() > MAX_REQUEST_URI_BYTES) fail("limit_exceeded", "request_uri", "\"request_uri\" is too long");
}

void packMap(msgpack::packer<msgpack::sbuffer> &packer, const StringMap &map) {
    packer.pack_map(static_cast<uint32_t>(map.size()));
    for (const auto &[key, value] : map) {
        packer.pack(key);
        packer.pack(value);
    }
}

void packBin(msgpack::packer<msgpack::sbuffer> &packer, const Bytes &bytes) {
    packer.pack_bin(static_cast<uint32_t>(bytes.size()));
    packer.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

} // namespace

Bytes encodeRequest(const Request &request) {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> packer(buffer);
    packer.pack_map(7);
    packer.pack(std::string("uuid")).pack(request.uuid);
    packer.pack(std::string("request_uri")).pack(request.request_uri);
    packer.pack(std::string("http_method")).pack(request.http_method);
    packer.pack(std::string("client_addr")).pack(request.client_addr);
    packer.pack(std::string("headers"));
    packMap(packer, request.headers);
    packer.pack(std::string("query"));
    packMap(packer, request.query);
    packer.pack(std::string("body"));
    packBin(packer, request.body);
    return Bytes(buffer.data(), buffer.size());
}

Bytes encodeResponse(const Response &response) {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> packer(buffer);
    packer.pack_map(6);
    packer.pack(std::string("uuid")).pack(response.uuid);
    packer.pack(std::string("request_uri")).pack(response.request_uri);
    packer.pack(std::string("http_status")).pack(response.http_status);
    packer.pack(std::string("body_msg_type")).pack(response.body_msg_type);
    packer.pack(std::string("headers"));
    packMap(packer, response.headers);
    packer.pack(std::string("body"));
    packBin(packer, response.body);
    return Bytes(buffer.data(), buffer.size());
}

Request decodeRequest(const Bytes &bytes) {
    const auto handle = unpackOne(bytes);
    const auto f = fields(handle.get());
    Request request;
    request.uuid = requiredString(f, "uuid");
    request.request_uri = requiredString(f, "request_uri");
    request.http_method = requiredString(f, "http_method");
    checkCommon(request.uuid, request.request_uri);
    request.client_addr = optionalString(f, "client_addr");
    request.headers = stringMap(f, "headers");
    request.query = stringMap(f, "query");
    request.body = body(f);
    return request;
}

Response decodeResponse(const Bytes &bytes) {
    const auto handle = unpackOne(bytes);
    const auto f = fields(handle.get());
    Response response;
    response.uuid = requiredString(f, "uuid");
    response.request_uri = requiredString(f, "request_uri");
    const auto *status = find(f, "http_status");
    if (status == nullptr) fail("missing_field", "http_status", "\"http_status\" is missing");
    if (status->type != msgpack::type::POSITIVE_INTEGER || status->via.u64 < 100 || status->via.u64 > 599)
        fail("wrong_type", "http_status", "\"http_status\" is not an integer in [100, 599]");
    response.http_status = static_cast<int>(status->via.u64);
    checkCommon(response.uuid, response.request_uri);
    response.body_msg_type = optionalString(f, "body_msg_type");
    response.headers = stringMap(f, "headers");
    response.body = body(f);
    return response;
}

Bytes encodeFrame(const Bytes &body, uint64_t maxBodyBytes) {
    if (body.size() > maxBodyBytes || body.size() > 0xFFFFFFFFULL)
        fail("too_large", "", "frame body of " + std::to_string(body.size()) + " bytes is over the limit");
    const auto length = static_cast<uint32_t>(body.size());
    Bytes out;
    out.reserve(FRAME_HEADER_BYTES + body.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((FRAME_MAGIC >> shift) & 0xFF));
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((length >> shift) & 0xFF));
    out += body;
    return out;
}

void FrameDecoder::push(const char *data, size_t size, std::vector<Bytes> &bodies) {
    if (m_failed) fail("invalid_frame", "", "the frame stream already failed");
    m_buffer.append(data, size);
    for (;;) {
        if (m_buffer.size() < FRAME_HEADER_BYTES) break;
        const auto byte = [this](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(m_buffer[i])); };
        const uint32_t magic = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
        const uint32_t length = byte(4) << 24 | byte(5) << 16 | byte(6) << 8 | byte(7);
        if (magic != FRAME_MAGIC) {
            m_failed = true;
            char text[16];
            std::snprintf(text, sizeof text, "%08x", magic);
            throw WireError("bad_magic", "", std::string("bad frame magic 0x") + text);
        }
        if (length > m_max) {
            m_failed = true;
            throw WireError("too_large", "", "frame announces " + std::to_string(length) + " bytes, over the limit");
        }
        if (m_buffer.size() < FRAME_HEADER_BYTES + length) break;
        bodies.push_back(m_buffer.substr(FRAME_HEADER_BYTES, length));
        m_buffer.erase(0, FRAME_HEADER_BYTES + length);
    }
}

std::string randomUuid() {
    unsigned char b[16];
    if (RAND_bytes(b, sizeof b) != 1) throw SvcError("RAND_bytes failed");
    b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);
    b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);
    char text[37];
    std::snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                  b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return text;
}

} // namespace svc::wire
