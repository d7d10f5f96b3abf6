// REST transport on libcurl: one easy handle per call (calls may come from several threads).
#include <curl/curl.h>

#include <cctype>
#include <mutex>

#include "svc/errors.h"
#include "svc/transport.h"

namespace svc {
namespace {

std::once_flag curlInit;

struct Exchange {
    WireResult result;
    const std::atomic<bool> *cancel = nullptr;
};

int onProgress(void *user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const auto *exchange = static_cast<Exchange *>(user);
    return exchange->cancel != nullptr && exchange->cancel->load() ? 1 : 0;
}

size_t onBody(char *data, size_t size, size_t count, void *user) {
    static_cast<Exchange *>(user)->result.body.append(data, size * count);
    return size * count;
}

size_t onHeader(char *data, size_t size, size_t count, void *user) {
    auto &result = static_cast<Exchange *>(user)->result;
    std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
        result.headers.clear(); // a new status line (after 100 Continue)
        return size * count;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) return size * count;
    std::string name = line.substr(0, colon);
    for (auto &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t\r\n");
    value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
    result.headers[name] = value;
    return size * count;
}

class RestTransport : public Transport {
public:
    RestTransport(std::string baseUrl, TlsOptions tls) : m_base(std::move(baseUrl)), m_tls(std::move(tls)) {
        while (!m_base.empty() && m_base.back() == '/') m_base.pop_back();
        std::call_once(curlInit, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    }
    std::string kind() const override { return "rest"; }
    void close() override {}

    WireResult call(const WireCall &call) override {
        std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
        if (!curl) throw SvcConnectionError("curl_easy_init failed");
        CURL *h = curl.get();
        std::string url = m_base + call.path;
        char separator = '?';
        for (const auto &[key, value] : call.query) {
            url += separator + escape(h, key) + "=" + escape(h, value);
            separator = '&';
        }
        curl_slist *headers = nullptr;
        for (const auto &[name, value] : call.headers) headers = curl_slist_append(headers, (name + ": " + value).c_str());
        headers = curl_slist_append(headers, "Expect:");
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headerList(headers, curl_slist_free_all);
        Exchange exchange;
        exchange.cancel = call.cancel;
        if (call.cancel != nullptr) {
            curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
            curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, onProgress);
            curl_easy_setopt(h, CURLOPT_XFERINFODATA, &exchange);
        }
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, call.method.c_str());
        if (call.method == "GET") curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        else if (call.method != "DELETE" || !call.body.empty()) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, call.body.data());
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
        }
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headerList.get());
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, onBody);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &exchange);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, onHeader);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &exchange);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
        if (!m_tls.caFile.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, m_tls.caFile.c_str());
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, m_tls.verify ? 1L : 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, m_tls.verify ? 2L : 0L);
        const CURLcode code = curl_easy_perform(h);
        // The message names the failure, never the URL's query (no secret travels there anyway).
        if (code == CURLE_ABORTED_BY_CALLBACK) throw SvcCancelledError("the call was cancelled");
        if (code != CURLE_OK) throw SvcConnectionError(std::string("REST request failed: ") + curl_easy_strerror(code));
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        exchange.result.status = static_cast<int>(status);
        const auto type = exchange.result.headers.find("content-type");
        if (type != exchange.result.headers.end()) exchange.result.contentType = type->second;
        return std::move(exchange.result);
    }

private:
    static std::string escape(CURL *h, const std::string &text) {
        char *escaped = curl_easy_escape(h, text.data(), static_cast<int>(text.size()));
        std::string out = escaped == nullptr ? "" : escaped;
        curl_free(escaped);
        return out;
    }

    std::string m_base;
    TlsOptions m_tls;
};

} // namespace

std::unique_ptr<Transport> makeRestTransport(const std::string &baseUrl, const TlsOptions &tls) {
    const auto parsed = parseUrl(baseUrl);
    if (parsed.scheme != "https" && parsed.scheme != "http") throw SvcError("REST needs an http(s) URL");
    return std::make_unique<RestTransport>(baseUrl, tls);
}

ParsedUrl parseUrl(const std::string &url) {
    ParsedUrl out;
    const auto scheme = url.find("://");
    if (scheme == std::string::npos) throw SvcError("not a URL (no scheme)");
    out.scheme = url.substr(0, scheme);
    std::string rest = url.substr(scheme + 3);
    const auto slash = rest.find('/');
    out.path = slash == std::string::npos ? "/" : rest.substr(slash);
    std::string authority = rest.substr(0, slash);
    const auto colon = authority.rfind(':');
    const bool bracketed = !authority.empty() && authority.front() == '[';
    if (colon != std::string::npos && (!bracketed || authority.find(']') < colon)) {
        const std::string port = authority.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
            throw SvcError("URL with a bad port");
        out.port = std::stoi(port);
        if (out.port < 1 || out.port > 65535) throw SvcError("URL with a bad port");
        authority = authority.substr(0, colon);
    } else out.port = (out.scheme == "https" || out.scheme == "wss") ? 443 : 80;
    if (bracketed) authority = authority.substr(1, authority.size() - 2);
    if (authority.empty()) throw SvcError("URL without a host");
    out.host = authority;
    return out;
}

} // namespace svc
