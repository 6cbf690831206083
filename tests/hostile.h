#pragma once
// Hostile-input tests: run a piece of work in a child process under a time bound (alarm) and
// measure how much memory it took (peak resident set growth, getrusage), so that a hang, a crash
// (a stack overflow, an abort) or unbounded memory fails the test instead of taking the runner
// down. The bound is asserted, not a timing: it is set 10x or more above the figure a fixed
// build measures and below what the unfixed code needed.

#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

namespace headroom::test {

/// What a bounded child run did.
struct BoundedRun {
    bool finished = false;        ///< the work returned (no signal, no timeout)
    int signal = 0;               ///< the signal that ended the child (SIGALRM: the time bound)
    int exitCode = -1;            ///< the work's return value when finished (0..255)
    std::uint64_t peakGrowthBytes = 0; ///< peak RSS of the child minus its RSS before the work
    double wallSeconds = 0;       ///< time the child ran
    /// "finished (exit 0) in 0.12 s, +8.4 MiB" for messages.
    std::string describe() const
    {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s (exit %d, signal %d) in %.2f s, peak RSS +%.1f MiB",
                      finished ? "finished" : "did not finish", exitCode, signal, wallSeconds,
                      static_cast<double>(peakGrowthBytes) / (1 << 20));
        return buf;
    }
};

/// True when this process runs under AddressSanitizer (tst_core_asan links the same test
/// objects as tst_core, so this is a run-time question): its bounds are scaled up.
inline bool underAsan() { return ::dlsym(RTLD_DEFAULT, "__asan_init") != nullptr; }

/// Scales a bound for the sanitized build (ASan: ~3x memory, ~5x time).
inline std::uint64_t memoryBound(std::uint64_t bytes) { return underAsan() ? bytes * 4 + (256u << 20) : bytes; }
inline unsigned timeBound(unsigned seconds) { return underAsan() ? seconds * 5 : seconds; }

/// Resident set of this process now, bytes (/proc/self/statm).
inline std::uint64_t residentBytes()
{
    std::ifstream statm("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

/// Runs @p work in a forked child with an alarm of @p seconds; the child's return value is
/// work()'s (0..255). Memory: the child reports its peak RSS growth through a pipe.
inline BoundedRun runBounded(unsigned seconds, const std::function<int()>& work)
{
    BoundedRun run;
    int fds[2];
    if (::pipe(fds) != 0)
        return run;
    std::fflush(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        ::signal(SIGALRM, SIG_DFL);
        ::alarm(seconds);
        // The parent's freed heap (a hostile file it built, then dropped) is handed back first:
        // reused by the work, it would hide the work's own growth from the peak.
        ::malloc_trim(0);
        // A forked child's peak RSS (ru_maxrss) starts at the parent's RSS at fork: without a
        // reset, what malloc_trim just handed back counted as the work's growth (+47 MiB for a
        // one-byte write when tst_core ran whole). Writing 5 to clear_refs (Linux 4.0+,
        // proc(5)) resets the high-water mark to the RSS now.
        if (std::FILE* refs = std::fopen("/proc/self/clear_refs", "w")) {
            std::fputs("5", refs);
            std::fclose(refs);
        }
        const std::uint64_t before = residentBytes();
        const int code = work();
        rusage usage {};
        ::getrusage(RUSAGE_SELF, &usage);
        const std::uint64_t peak = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
        const std::uint64_t growth = peak > before ? peak - before : 0;
        (void)!::write(fds[1], &growth, sizeof growth);
        ::_exit(code & 255);
    }
    ::close(fds[1]);
    std::uint64_t growth = 0;
    const bool got = ::read(fds[0], &growth, sizeof growth) == static_cast<ssize_t>(sizeof growth);
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    run.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (WIFSIGNALED(status))
        run.signal = WTERMSIG(status);
    if (WIFEXITED(status) && got) {
        run.finished = true;
        run.exitCode = WEXITSTATUS(status);
        run.peakGrowthBytes = growth;
    }
    return run;
}

/// A scratch folder removed with its contents at scope exit.
class ScratchDir {
public:
    explicit ScratchDir(const std::string& tag)
    {
        static int counter = 0;
        m_path = std::filesystem::temp_directory_path()
            / ("headroom-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~ScratchDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

/// Writes @p bytes to @p file (creating its folder).
template <typename Bytes>
void writeBytes(const std::filesystem::path& file, const Bytes& bytes)
{
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

} // namespace headroom::test
