#pragma once
/// @file curlhttpclient.h
/// core's HttpClient over libcurl (Debian libcurl4-openssl-dev): redirects followed (the hub
/// answers `resolve/` with 302s to its CDN), connect and stall timeouts, retries with
/// exponential backoff on timeouts, dropped connections and HTTP 429/5xx (Retry-After honoured,
/// capped), and bodies capped at HttpRequest::maxBodyBytes (a server that sends more is cut off).

#include "headroom/core/remote/remotemodel.h"

#include <chrono>
#include <memory>

namespace headroom {

/// Timeouts and retries of the libcurl client.
struct CurlOptions {
    std::chrono::milliseconds connectTimeout{10'000};  ///< TCP + TLS connect, per attempt
    std::chrono::milliseconds transferTimeout{120'000};///< whole transfer, per attempt
    std::chrono::seconds stallTime{20};                ///< abort when under 1 B/s for this long
    int retries = 3;                                   ///< attempts after the first
    std::chrono::milliseconds backoffBase{500};        ///< wait before retry k: base * 2^k, at most backoffMax
    std::chrono::milliseconds backoffMax{8'000};       ///< longest wait between attempts (also caps Retry-After)
};

/// The options with HEADROOM_HTTP_TIMEOUT_S (whole transfer and stall), HEADROOM_HTTP_RETRIES and
/// HEADROOM_HTTP_BACKOFF_MS applied when set (tests shorten them).
CurlOptions curlOptionsFromEnvironment();

/// A libcurl client; curl_global_init runs once, on first use.
std::shared_ptr<HttpClient> makeCurlHttpClient(const CurlOptions& options = curlOptionsFromEnvironment());

} // namespace headroom
