// TCP and WSS transports on Boost.Asio (OpenSSL TLS) and Boost.Beast (WebSocket).
//
//   caller thread: call() ─▶ demux.expect(uuid) ─▶ post(write) ─▶ future.get()   (no timer: rule 3)
//   io thread:     one read loop ─▶ FrameDecoder / WS message ─▶ decodeResponse ─▶ demux.deliver
//                  one write queue (one async write in flight)
//   any failure or close ─▶ demux.stop() (waiters fail, callbacks get __disconnected__) ─▶ closed
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include "svc/errors.h"
#include "svc/transport.h"

namespace svc {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

void configureTls(ssl::context &context, const TlsOptions &tls) {
    if (!tls.verify) {
        context.set_verify_mode(ssl::verify_none);
        return;
    }
    context.set_verify_mode(ssl::verify_peer);
    if (tls.caFile.empty()) context.set_default_verify_paths();
    else context.load_verify_file(tls.caFile);
}

template <typename Stream> void verifyHost(Stream &stream, const std::string &host, const TlsOptions &tls) {
    if (!tls.verify) return;
    // host_name_verification checks DNS names and IP addresses (X509_VERIFY_PARAM_set1_host/ip).
    stream.set_verify_callback(ssl::host_name_verification(host));
    if (host.find_first_not_of("0123456789.:") != std::string::npos)
        SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
}

/** The limits of spec/wire-vectors.json: a request over them throws WireError, nothing is sent. */
void checkLimits(const wire::Request &request) {
    if (request.request_uri.size() > wire::MAX_REQUEST_URI_BYTES)
        throw WireError("limit_exceeded", "request_uri", "request_uri is over 8 KiB");
    for (const auto *map : {&request.headers, &request.query}) {
        const char *field = map == &request.headers ? "headers" : "query";
        if (map->size() > wire::MAX_HEADERS) throw WireError("limit_exceeded", field, std::string("too many ") + field);
        for (const auto &[name, value] : *map)
            if (name.size() > wire::MAX_HEADER_VALUE_BYTES || value.size() > wire::MAX_HEADER_VALUE_BYTES)
                throw WireError("limit_exceeded", std::string(field) + "." + name, std::string("a ") + field + " entry is over 64 KiB");
    }
}

/** What TCP and WSS share: the io thread, the write queue, the close state, the demultiplexer. */
class AsioTransport : public Transport {
public:
    explicit AsioTransport(const TlsOptions &tls) : m_ssl(ssl::context::tls_client) { configureTls(m_ssl, tls); }

    ~AsioTransport() override { shutdownThread(); }

    Demultiplexer *demux() override { return &m_demux; }

    WireResult call(const WireCall &call) override {
        wire::Request request;
        request.uuid = wire::randomUuid();
        request.request_uri = call.path;
        request.http_method = call.method;
        request.headers = call.headers;
        request.query = call.query;
        request.body = call.body;
        checkLimits(request); // what the daemon would refuse by closing the connection is refused here
        auto message = std::make_shared<wire::Bytes>(encodeMessage(wire::encodeRequest(request)));
        auto answer = m_demux.expect(request.uuid); // rule 2: registered before the bytes go out
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (m_closed) m_demux.cancel(request.uuid, "transport is closed");
            else
                asio::post(m_io, [this, message] {
                    m_queue.push_back(message);
                    if (m_queue.size() == 1) writeNext();
                });
        }
        // No timer (rule 3): the wait ends with the answer, a disconnect, or the caller's cancel flag.
        if (call.cancel != nullptr)
            while (answer.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
                if (call.cancel->load()) {
                    m_demux.cancel(request.uuid, "the call was cancelled");
                    throw SvcCancelledError("the call was cancelled");
                }
        const wire::Response response = answer.get();
        WireResult result;
        result.status = response.http_status;
        result.contentType = response.body_msg_type;
        for (const auto &[name, value] : response.headers) {
            std::string lower = name;
            for (auto &c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            result.headers[lower] = value;
        }
        result.body = response.body;
        return result;
    }

    void close() override {
        fail("closed by the client");
        waitClosed(std::chrono::seconds(10));
        shutdownThread();
    }

    bool waitClosed(std::chrono::milliseconds timeout) override {
        std::unique_lock<std::mutex> lock(m_mutex);
        return m_closedCv.wait_for(lock, timeout, [this] { return m_closed; });
    }

protected:
    /** The bytes of one outgoing message (a frame for TCP, the message itself for WSS). */
    virtual wire::Bytes encodeMessage(const wire::Bytes &body) = 0;
    /** Starts writing m_queue.front() on the io thread; calls onWritten when done. */
    virtual void writeNext() = 0;
    /** Closes the socket on the io thread. */
    virtual void closeSocket() = 0;

    void onWritten(const boost::system::error_code &error) {
        if (error) return fail("write failed: " + error.message());
        m_queue.pop_front();
        if (!m_queue.empty()) writeNext();
    }

    void deliver(const wire::Bytes &body) {
        m_demux.deliver(wire::decodeResponse(body)); // throws WireError on a malformed message
    }

    /** The transport is gone: stop the demultiplexer, close the socket, wake waitClosed. */
    void fail(const std::string &reason) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (m_closed) return;
            m_closed = true;
        }
        m_demux.stop(reason);
        asio::post(m_io, [this] {
            closeSocket();
            m_work.reset();
        });
        m_closedCv.notify_all();
    }

    void startThread() {
        m_thread = std::thread([this] {
            for (;;) {
                try {
                    m_io.run();
                    return;
                } catch (const std::exception &error) {
                    fail(std::string("transport failed: ") + error.what());
                }
            }
        });
    }

    void shutdownThread() {
        fail("transport destroyed");
        if (m_thread.joinable()) {
            if (m_thread.get_id() == std::this_thread::get_id()) m_thread.detach();
            else m_thread.join();
        }
    }

    asio::io_context m_io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> m_work{asio::make_work_guard(m_io)};
    ssl::context m_ssl;
    Demultiplexer m_demux;
    std::deque<std::shared_ptr<wire::Bytes>> m_queue;
    std::mutex m_mutex;
    std::condition_variable m_closedCv;
    bool m_closed = false;
    std::thread m_thread;
};

class TcpTransport final : public AsioTransport {
public:
    TcpTransport(const TlsOptions &tls, uint64_t maxBodyBytes)
        : AsioTransport(tls), m_stream(m_io, m_ssl), m_decoder(maxBodyBytes) {}
    ~TcpTransport() override { shutdownThread(); }

    std::string kind() const override { return "tcp"; }

    void connect(const std::string &host, int port, const TlsOptions &tls) {
        try {
            tcp::resolver resolver(m_io);
            asio::connect(m_stream.lowest_layer(), resolver.resolve(host, std::to_string(port)));
            m_stream.lowest_layer().set_option(tcp::no_delay(true));
            verifyHost(m_stream, host, tls);
            m_stream.handshake(ssl::stream_base::client);
        } catch (const boost::system::system_error &error) {
            throw SvcConnectionError("TCP connection to " + host + ":" + std::to_string(port) + " failed: " + error.what());
        }
        readMore();
        startThread();
    }

protected:
    wire::Bytes encodeMessage(const wire::Bytes &body) override { return wire::encodeFrame(body); }

    void writeNext() override {
        asio::async_write(m_stream, asio::buffer(*m_queue.front()),
                          [this](const boost::system::error_code &error, std::size_t) { onWritten(error); });
    }

    void closeSocket() override {
        boost::system::error_code ignored;
        m_stream.lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
        m_stream.lowest_layer().close(ignored);
    }

private:
    void readMore() {
        m_stream.async_read_some(asio::buffer(m_chunk), [this](const boost::system::error_code &error, std::size_t n) {
            if (error) return fail(error == asio::error::eof || error == ssl::error::stream_truncated
                                       ? "connection closed by the server"
                                       : "read failed: " + error.message());
            try {
                std::vector<wire::Bytes> bodies;
                m_decoder.push(m_chunk.data(), n, bodies);
                for (const auto &body : bodies) deliver(body);
            } catch (const std::exception &error) {
                return fail(std::string("bad data from the server: ") + error.what());
            }
            readMore();
        });
    }

    ssl::stream<tcp::socket> m_stream;
    wire::FrameDecoder m_decoder;
    std::array<char, 64 * 1024> m_chunk{};
};

class WssTransport final : public AsioTransport {
public:
    WssTransport(const TlsOptions &tls, uint64_t maxBodyBytes) : AsioTransport(tls), m_ws(m_io, m_ssl) {
        m_ws.read_message_max(maxBodyBytes);
        m_ws.binary(true);
    }
    ~WssTransport() override { shutdownThread(); }

    std::string kind() const override { return "wss"; }

    void connect(const ParsedUrl &url, const TlsOptions &tls, const std::string &bearer, const std::string &targetHost) {
        try {
            tcp::resolver resolver(m_io);
            asio::connect(beast::get_lowest_layer(m_ws), resolver.resolve(url.host, std::to_string(url.port)));
            beast::get_lowest_layer(m_ws).set_option(tcp::no_delay(true));
            verifyHost(m_ws.next_layer(), url.host, tls);
            m_ws.next_layer().handshake(ssl::stream_base::client);
            m_ws.set_option(beast::websocket::stream_base::decorator([bearer, targetHost](beast::websocket::request_type &req) {
                req.set(beast::http::field::sec_websocket_protocol, "svc-ws");
                if (!bearer.empty()) req.set(beast::http::field::authorization, "Bearer " + bearer);
                if (!targetHost.empty()) req.set("X-Target-Host", targetHost);
            }));
            beast::websocket::response_type answer;
            beast::error_code error;
            m_ws.handshake(answer, url.host + ":" + std::to_string(url.port), url.path, error);
            if (error) {
                throw SvcConnectionError("WebSocket upgrade failed: HTTP " + std::to_string(answer.result_int()) + " " +
                                         error.message());
            }
        } catch (const boost::system::system_error &error) {
            throw SvcConnectionError("WSS connection to " + url.host + ":" + std::to_string(url.port) +
                                     " failed: " + error.what());
        }
        readMore();
        startThread();
    }

protected:
    wire::Bytes encodeMessage(const wire::Bytes &body) override { return body; }

    void writeNext() override {
        m_ws.async_write(asio::buffer(*m_queue.front()),
                         [this](const boost::system::error_code &error, std::size_t) { onWritten(error); });
    }

    void closeSocket() override {
        boost::system::error_code ignored;
        beast::get_lowest_layer(m_ws).shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(m_ws).close(ignored);
    }

private:
    void readMore() {
        m_ws.async_read(m_buffer, [this](const boost::system::error_code &error, std::size_t) {
            if (error) return fail(error == beast::websocket::error::closed ? "connection closed by the server"
                                                                           : "read failed: " + error.message());
            if (!m_ws.got_binary()) return fail("text WebSocket frame: binary msgpack only");
            try {
                deliver(beast::buffers_to_string(m_buffer.data()));
            } catch (const std::exception &error) {
                return fail(std::string("bad data from the server: ") + error.what());
            }
            m_buffer.consume(m_buffer.size());
            readMore();
        });
    }

    beast::websocket::stream<ssl::stream<tcp::socket>> m_ws;
    beast::flat_buffer m_buffer;
};

} // namespace

std::unique_ptr<Transport> connectTcpTransport(const std::string &host, int port, const TlsOptions &tls,
                                               uint64_t maxBodyBytes) {
    auto transport = std::make_unique<TcpTransport>(tls, maxBodyBytes);
    transport->connect(host, port, tls);
    return transport;
}

std::unique_ptr<Transport> connectWssTransport(const std::string &url, const TlsOptions &tls, const std::string &bearer,
                                               const std::string &targetHost, uint64_t maxBodyBytes) {
    auto parsed = parseUrl(url);
    if (parsed.scheme != "wss" && parsed.scheme != "https") throw SvcError("WSS needs a wss:// or https:// URL");
    auto transport = std::make_unique<WssTransport>(tls, maxBodyBytes);
    transport->connect(parsed, tls, bearer, targetHost);
    return transport;
}

} // namespace svc
