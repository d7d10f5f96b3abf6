#include "svc/errors.h"

#include <nlohmann/json.hpp>

namespace svc {

SvcRequestError::SvcRequestError(int status, std::string code, const std::string &message,
                                 std::map<std::string, std::string> headers)
    : SvcError(message), m_status(status), m_code(std::move(code)), m_headers(std::move(headers)) {}

SvcRequestError SvcRequestError::fromResponse(int status, const std::string &body,
                                              std::map<std::string, std::string> headers) {
    std::string code = "http_" + std::to_string(status);
    std::string message = "HTTP " + std::to_string(status);
    const auto parsed = nlohmann::json::parse(body, nullptr, false);
    if (parsed.is_object()) {
        const auto error = parsed.find("error");
        if (error != parsed.end() && error->is_string()) code = error->get<std::string>();
        const auto text = parsed.find("message");
        if (text != parsed.end() && text->is_string()) message = text->get<std::string>();
    }
    return SvcRequestError(status, code, message, std::move(headers));
}

AppRemovedError::AppRemovedError(const std::string &appName)
    : SvcError("application " + appName + " was removed before its process exited"), m_appName(appName) {}

WireError::WireError(std::string category, std::string field, const std::string &message)
    : SvcError(message), m_category(std::move(category)), m_field(std::move(field)) {}

} // namespace svc
