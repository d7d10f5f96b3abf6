// spec/wire-vectors.json: every case through this client's codec and frame decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "support.h"
#include "svc/errors.h"
#include "svc/wire.h"

namespace svc::test {
namespace {

std::string unhex(const std::string &hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::string hexOf(const std::string &bytes) {
    static const char *digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0x0F]);
    }
    return out;
}

const nlohmann::json &vectors() {
    static const nlohmann::json all = loadSpec("wire-vectors.json");
    return all;
}

std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto &item : vectors()) out.push_back(item.at("name").get<std::string>());
    return out;
}

const nlohmann::json &byName(const std::string &name) {
    for (const auto &item : vectors())
        if (item.at("name") == name) return item;
    throw std::runtime_error("no vector " + name);
}

wire::StringMap stringMap(const nlohmann::json &json) {
    wire::StringMap out;
    for (const auto &[key, value] : json.items()) out[key] = value.get<std::string>();
    return out;
}

/**
 * std::map orders entries by name: the exact bytes are comparable only when the vector's maps are
 * in that order (read with ordered_json, which keeps the file's order).
 */
bool sortedMaps(const std::string &name) {
    static const auto raw = [] {
        std::ifstream in(std::string(SVC_SPEC_DIR) + "/wire-vectors.json");
        return nlohmann::ordered_json::parse(in);
    }();
    for (const auto &item : raw) {
        if (item.at("name") != name) continue;
        for (const char *key : {"headers", "query"}) {
            if (!item.at("decoded").contains(key)) continue;
            std::vector<std::string> keys;
            for (const auto &[k, v] : item["decoded"][key].items()) keys.push_back(k);
            if (!std::is_sorted(keys.begin(), keys.end())) return false;
        }
    }
    return true;
}

nlohmann::json asJson(const wire::Request &r) {
    return {{"uuid", r.uuid}, {"request_uri", r.request_uri}, {"http_method", r.http_method}, {"client_addr", r.client_addr},
            {"headers", r.headers}, {"query", r.query}, {"body", {{"$hex", hexOf(r.body)}}}};
}

nlohmann::json asJson(const wire::Response &r) {
    return {{"uuid", r.uuid}, {"request_uri", r.request_uri}, {"http_status", r.http_status},
            {"body_msg_type", r.body_msg_type}, {"headers", r.headers}, {"body", {{"$hex", hexOf(r.body)}}}};
}

wire::Request requestOf(const nlohmann::json &d) {
    return {d.at("uuid"), d.at("request_uri"), d.at("http_method"), d.at("client_addr"), stringMap(d.at("headers")),
            stringMap(d.at("query")), unhex(d.at("body").at("$hex"))};
}

wire::Response responseOf(const nlohmann::json &d) {
    return {d.at("uuid"), d.at("request_uri"), d.at("http_status"), d.value("body_msg_type", ""),
            stringMap(d.at("headers")), unhex(d.at("body").at("$hex"))};
}

/** The decoded bodies and outcome of one chunking of a frame stream. */
struct FrameOutcome {
    std::vector<std::string> bodies;
    std::string error;
    size_t buffered = 0;
};

FrameOutcome feed(const std::string &stream, uint64_t max, const std::vector<size_t> &cuts) {
    FrameOutcome out;
    wire::FrameDecoder decoder(max);
    size_t from = 0;
    std::vector<size_t> ends = cuts;
    ends.push_back(stream.size());
    try {
        for (size_t end : ends) {
            std::vector<std::string> bodies;
            try {
                decoder.push(stream.data() + from, end - from, bodies);
            } catch (...) {
                out.bodies.insert(out.bodies.end(), bodies.begin(), bodies.end());
                throw;
            }
            out.bodies.insert(out.bodies.end(), bodies.begin(), bodies.end());
            from = end;
        }
    } catch (const WireError &error) {
        out.error = error.category();
    }
    out.buffered = decoder.buffered();
    return out;
}

class WireVector : public ::testing::TestWithParam<std::string> {};

TEST_P(WireVector, SameOutcomeAsSpec) {
    const auto &v = byName(GetParam());
    const std::string kind = v.at("kind");
    const std::string bytes = unhex(v.at("hex"));
    if (kind == "frame") {
        const uint64_t max = v.at("max_body_bytes");
        std::vector<std::string> expected;
        for (const auto &body : v.at("decoded").at("bodies")) expected.push_back(unhex(body.at("$hex")));
        const std::string category = v.contains("error") ? v["error"].value("category", "") : "";
        std::vector<std::vector<size_t>> chunkings{{}};
        std::vector<size_t> everyByte;
        for (size_t i = 1; i < bytes.size(); ++i) {
            everyByte.push_back(i);
            chunkings.push_back({i});
        }
        chunkings.push_back(everyByte);
        for (const auto &cuts : chunkings) {
            const auto outcome = feed(bytes, max, cuts);
            EXPECT_EQ(outcome.bodies, expected) << "chunking with " << cuts.size() << " cuts";
            if (category == "bad_magic" || category == "too_large") EXPECT_EQ(outcome.error, category);
            else if (category == "truncated") {
                EXPECT_EQ(outcome.error, "");
                EXPECT_GT(outcome.buffered, 0u);
            } else {
                EXPECT_EQ(outcome.error, "");
                EXPECT_EQ(outcome.buffered, 0u);
            }
        }
        return;
    }
    if (v.contains("error")) {
        try {
            if (kind == "request") wire::decodeRequest(bytes);
            else wire::decodeResponse(bytes);
            FAIL() << "decoding succeeded";
        } catch (const WireError &error) {
            EXPECT_EQ(error.category(), v["error"].at("category").get<std::string>()) << error.what();
            if (v["error"].contains("field")) EXPECT_EQ(error.field(), v["error"]["field"].get<std::string>());
        }
        return;
    }
    const auto &decoded = v.at("decoded");
    const bool canonical = v.value("canonical", false);
    const bool ordered = sortedMaps(GetParam());
    if (kind == "request") {
        const auto request = wire::decodeRequest(bytes);
        EXPECT_EQ(asJson(request), decoded);
        const auto encoded = wire::encodeRequest(requestOf(decoded));
        if (canonical && ordered) EXPECT_EQ(hexOf(encoded), v.at("hex").get<std::string>());
        EXPECT_EQ(asJson(wire::decodeRequest(encoded)), decoded);
    } else {
        const auto response = wire::decodeResponse(bytes);
        EXPECT_EQ(asJson(response), decoded);
        const auto encoded = wire::encodeResponse(responseOf(decoded));
        if (canonical && ordered) EXPECT_EQ(hexOf(encoded), v.at("hex").get<std::string>());
        EXPECT_EQ(asJson(wire::decodeResponse(encoded)), decoded);
    }
}

INSTANTIATE_TEST_SUITE_P(Spec, WireVector, ::testing::ValuesIn(names()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(WireFrames, EncodeFrameRefusesABodyOverTheLimit) {
    EXPECT_THROW(wire::encodeFrame(std::string(17, 'x'), 16), WireError);
    EXPECT_EQ(wire::encodeFrame("ok").substr(0, 8), unhex("07c707f800000002"));
}

TEST(WireFrames, TheClientBoundIsOneGibibyte) { EXPECT_EQ(wire::CLIENT_MAX_BODY_BYTES, 1073741824ULL); }

TEST(WireFrames, ADecoderThatFailedStaysFailed) {
    wire::FrameDecoder decoder(16);
    std::vector<std::string> bodies;
    const auto bad = unhex("deadbeef00000000");
    EXPECT_THROW(decoder.push(bad.data(), bad.size(), bodies), WireError);
    const auto good = unhex("07c707f800000000");
    EXPECT_THROW(decoder.push(good.data(), good.size(), bodies), WireError);
    EXPECT_TRUE(bodies.empty());
}

TEST(WireFuzz, RandomBytesNeverCrashTheDecoders) {
    std::mt19937 random(20261124);
    for (int i = 0; i < 5000; ++i) {
        std::string bytes(random() % 64, '\0');
        for (auto &c : bytes) c = static_cast<char>(random() & 0xFF);
        if (i % 3 == 0 && !bytes.empty()) bytes[0] = static_cast<char>(0x80 | (random() % 16)); // a fixmap
        try {
            wire::decodeRequest(bytes);
        } catch (const WireError &) {
        }
        try {
            wire::decodeResponse(bytes);
        } catch (const WireError &) {
        }
    }
}

} // namespace
} // namespace svc::test
