#include "headroom/remote/curlhttpclient.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace headroom {

namespace {

struct Transfer {
    std::string body;
    std::uint64_t maxBody = 0;
    bool tooLarge = false;
    long status = 0;
    std::map<std::string, std::string> headers;
};

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* t = static_cast<Transfer*>(user);
    const std::size_t n = size * count;
    if (t->body.size() + n > t->maxBody) {
        t->tooLarge = true;
        return 0; // aborts the transfer (CURLE_WRITE_ERROR)
    }
    t->body.append(data, n);
    return n;
}

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* t = static_cast<Transfer*>(user);
    const std::size_t n = size * count;
    std::string line(data, std::min<std::size_t>(n, 8192));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.pop_back();
    if (line.starts_with("HTTP/")) {
        t->headers.clear(); // a new response (after a redirect or a 100 Continue)
        return n;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos || t->headers.size() > 256)
        return n;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    t->headers[name] = value;
    return n;
}

/// "bytes 0-7/12345" -> 12345.
std::optional<std::uint64_t> contentRangeTotal(const std::string& v)
{
    const auto slash = v.rfind('/');
    if (slash == std::string::npos || slash + 1 >= v.size() || v[slash + 1] == '*')
        return std::nullopt;
    char* end = nullptr;
    const unsigned long long total = std::strtoull(v.c_str() + slash + 1, &end, 10);
    return end && *end == '\0' ? std::optional<std::uint64_t>(total) : std::nullopt;
}

std::optional<std::uint64_t> number(const std::string& v)
{
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    return !v.empty() && end && *end == '\0' ? std::optional<std::uint64_t>(n) : std::nullopt;
}

bool retryableCurl(CURLcode c)
{
    return c == CURLE_OPERATION_TIMEDOUT || c == CURLE_PARTIAL_FILE || c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR ||
           c == CURLE_GOT_NOTHING || c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST;
}

bool retryableStatus(long s)
{
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

HttpError::Kind kindOf(CURLcode c, bool tooLarge)
{
    if (tooLarge)
        return HttpError::Kind::TooLarge;
    switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: return HttpError::Kind::Offline;
    case CURLE_OPERATION_TIMEDOUT: return HttpError::Kind::Timeout;
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR: return HttpError::Kind::Truncated;
    default: return HttpError::Kind::Protocol;
    }
}

class CurlHttpClient final : public HttpClient {
public:
    explicit CurlHttpClient(const CurlOptions& options) : m_options(options)
    {
        static std::once_flag once;
        std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    }

    tl::expected<HttpResponse, HttpError> get(const HttpRequest& request) override
    {
        tl::expected<HttpResponse, HttpError> last = tl::unexpected(HttpError{HttpError::Kind::Protocol, "no attempt"});
        for (int attempt = 0; attempt <= m_options.retries; ++attempt) {
            std::chrono::milliseconds retryAfter{0};
            bool retry = false;
            last = once(request, retry, retryAfter);
            if (!retry || attempt == m_options.retries)
                break;
            auto wait = std::min(m_options.backoffMax, m_options.backoffBase * (1 << std::min(attempt, 16)));
            wait = std::max(wait, std::min(retryAfter, m_options.backoffMax));
            std::this_thread::sleep_for(wait);
        }
        return last;
    }

private:
    tl::expected<HttpResponse, HttpError> once(const HttpRequest& request, bool& retry, std::chrono::milliseconds& retryAfter)
    {
        std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
        if (!curl)
            return tl::unexpected(HttpError{HttpError::Kind::Protocol, "curl_easy_init failed"});
        Transfer t;
        t.maxBody = request.maxBodyBytes;
        CURL* c = curl.get();
        curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 8L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(m_options.connectTimeout.count()));
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(m_options.transferTimeout.count()));
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(m_options.stallTime.count()));
        curl_easy_setopt(c, CURLOPT_USERAGENT, "headroom/" HEADROOM_VERSION);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
        std::string range;
        if (request.rangeBegin) {
            range = std::to_string(*request.rangeBegin) + "-" + (request.rangeEnd ? std::to_string(*request.rangeEnd) : "");
            curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
        }
        curl_slist* headers = nullptr;
        for (const std::string& h : request.headers)
            headers = curl_slist_append(headers, h.c_str());
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headerList(headers, &curl_slist_free_all);
        if (headers)
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        char errbuf[CURL_ERROR_SIZE] = {};
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);

        const CURLcode code = curl_easy_perform(c);
        long answered = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answered);
        // An error page longer than the bytes asked for (a hub's 404 "Entry not found", an
        // HF_ENDPOINT proxy's HTML) is cut, not a transfer error: the status is the answer.
        const bool errorPage = t.tooLarge && answered >= 400;
        if (code != CURLE_OK && !errorPage) {
            retry = !t.tooLarge && retryableCurl(code);
            std::string what = t.tooLarge ? "the server sent more than the " + std::to_string(request.maxBodyBytes) + " bytes asked for"
                                          : std::string(errbuf[0] ? errbuf : curl_easy_strerror(code));
            return tl::unexpected(HttpError{kindOf(code, t.tooLarge), request.url + ": " + what});
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.status);
        HttpResponse r;
        r.status = t.status;
        r.body = std::move(t.body);
        r.headers = std::move(t.headers);
        if (auto it = r.headers.find("content-range"); it != r.headers.end() && r.status == 206)
            r.totalBytes = contentRangeTotal(it->second);
        else if (auto cl = r.headers.find("content-length"); cl != r.headers.end() && r.status == 200)
            r.totalBytes = number(cl->second);
        if (retryableStatus(r.status)) {
            retry = true;
            if (auto ra = r.headers.find("retry-after"); ra != r.headers.end())
                if (auto s = number(ra->second))
                    retryAfter = std::chrono::milliseconds(std::min<std::uint64_t>(*s, 3600) * 1000);
        }
        return r;
    }

    CurlOptions m_options;
};

long envNumber(const char* name, long fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v)
        return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end && *end == '\0' && n >= 0 ? n : fallback;
}

} // namespace

CurlOptions curlOptionsFromEnvironment()
{
    CurlOptions o;
    if (const long s = envNumber("HEADROOM_HTTP_TIMEOUT_S", -1); s > 0) {
        o.transferTimeout = std::chrono::seconds(s);
        o.connectTimeout = std::min<std::chrono::milliseconds>(o.connectTimeout, std::chrono::seconds(s));
        o.stallTime = std::chrono::seconds(s);
    }
    o.retries = static_cast<int>(std::min<long>(envNumber("HEADROOM_HTTP_RETRIES", o.retries), 10));
    o.backoffBase = std::chrono::milliseconds(envNumber("HEADROOM_HTTP_BACKOFF_MS", o.backoffBase.count()));
    return o;
}

std::shared_ptr<HttpClient> makeCurlHttpClient(const CurlOptions& options)
{
    return std::make_shared<CurlHttpClient>(options);
}

} // namespace headroom
