// Child processes for probes that must survive aborts and driver faults (the limit search):
// fork() (+ exec of a worker) with a pipe for progress lines and the result line.
//
// Protocol, one line each, from the child to the parent:
//   P <fraction> <stage>     progress
//   R <result JSON>          the result (last line)

#include "workorder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace headroom::probes {

namespace detail {

namespace {

/// Writes all of @p text to @p fd (retrying on EINTR and short writes).
bool writeAll(int fd, std::string_view text)
{
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

/// Progress of a child: lines on a pipe; never cancelled (the parent kills the child instead).
class PipeProgress final : public ProbeProgress {
public:
    explicit PipeProgress(int fd) : m_fd(fd) {}
    void report(double fraction, std::string_view stage) override
    {
        std::string line = "P " + std::to_string(fraction) + " ";
        for (char c : stage)
            line += (c == '\n' || c == '\r') ? ' ' : c;
        line += '\n';
        (void)writeAll(m_fd, line);
    }
    bool cancelled() const override { return false; }

private:
    int m_fd;
};

/// "SIGSEGV (Segmentation fault)".
std::string signalText(int sig)
{
    const char* abbrev = sigabbrev_np(sig);
    const char* description = strsignal(sig);
    std::string text = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
    if (description)
        text += std::string(" (") + description + ")";
    return text;
}

/// In the child: crashes take the default action (so the parent names the signal, instead of
/// handlers inherited from the caller, e.g. a test framework, reporting them), and Ctrl-C is left
/// to the parent, which cancels by killing the child. SIG_IGN survives exec.
void resetChildSignals()
{
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM})
        ::signal(sig, SIG_DFL);
    ::signal(SIGINT, SIG_IGN);
}

/// In the child, first thing: die with the parent. PR_SET_PDEATHSIG sends SIGKILL when the
/// thread that forked exits (it waits in runIsolated until the child ends, so only the parent's
/// death ends it early), and it survives exec of the worker. A parent that died between fork()
/// and the call is caught by the getppid() check.
void dieWithParent(pid_t parent)
{
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
        ::_exit(1);
}

/// Child side: runs the order, writes the result line, and leaves without running the parent's
/// atexit handlers or flushing its stdio buffers.
[[noreturn]] void childMain(int outFd, const std::string& order)
{
    resetChildSignals();
    PipeProgress progress(outFd);
    const ProbeResult result = executeWorkOrder(order, progress);
    (void)writeAll(outFd, "R " + probeResultToJson(result, -1) + "\n");
    ::_exit(0);
}

} // namespace

ProbeResult runIsolated(const std::string& probe, const std::string& order, const Isolation& isolation,
                        DeviceKind kind, ProbeProgress& progress)
{
    Isolation::Mode mode = isolation.mode;
    if (mode == Isolation::Mode::Fork && kind == DeviceKind::Cuda) {
        // A CUDA context does not survive fork(): the child must exec a fresh process.
        if (isolation.workerCommand.empty())
            return failedResult(probe, "CUDA probes in a child process need a worker command (Isolation::Exec)");
        mode = Isolation::Mode::Exec;
    }
    if (mode == Isolation::Mode::InProcess)
        return executeWorkOrder(order, progress);
    if (mode == Isolation::Mode::Exec && isolation.workerCommand.empty())
        return failedResult(probe, "Isolation::Exec without a worker command");

    int out[2];
    int in[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0)
        return failedResult(probe, std::string("pipe failed: ") + std::strerror(errno));
    if (mode == Isolation::Mode::Exec) {
        // The order goes into the worker's stdin pipe before fork(): it fits the pipe buffer
        // (64 KiB on Linux), so no write can block or raise SIGPIPE if the worker dies early.
        if (order.size() > 60000 || ::pipe2(in, O_CLOEXEC) != 0 || !writeAll(in[1], order)) {
            ::close(out[0]);
            ::close(out[1]);
            if (in[0] >= 0) {
                ::close(in[0]);
                ::close(in[1]);
            }
            return failedResult(probe, "cannot pass the work order to the worker");
        }
    }
    std::vector<std::string> argv = isolation.workerCommand;
    std::vector<char*> args;
    for (std::string& a : argv)
        args.push_back(a.data());
    args.push_back(nullptr);

    std::fflush(nullptr); // nothing buffered twice
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        if (in[0] >= 0) {
            ::close(in[0]);
            ::close(in[1]);
        }
        return failedResult(probe, std::string("fork failed: ") + std::strerror(errno));
    }
    if (pid == 0) {
        dieWithParent(parent);
        ::close(out[0]);
        if (mode == Isolation::Mode::Fork)
            childMain(out[1], order);
        // Exec: stdin = the order, stdout = the protocol pipe.
        resetChildSignals();
        ::dup2(in[0], STDIN_FILENO);
        ::dup2(out[1], STDOUT_FILENO);
        ::execv(args[0], args.data());
        const std::string msg = "R " + probeResultToJson(failedResult(probe, "cannot run the worker " + argv[0] + ": " + std::strerror(errno)), -1) + "\n";
        (void)writeAll(STDOUT_FILENO, msg);
        ::_exit(127);
    }
    ::close(out[1]);
    if (mode == Isolation::Mode::Exec) {
        ::close(in[0]);
        ::close(in[1]);
    }

    std::string buffer;
    std::optional<ProbeResult> result;
    bool cancelled = false;
    bool eof = false;
    while (!eof) {
        if (progress.cancelled()) {
            cancelled = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd p{out[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, 100); // cancellation is checked every 100 ms
        if (ready < 0 && errno != EINTR)
            break;
        if (ready <= 0)
            continue;
        char chunk[4096];
        const ssize_t n = ::read(out[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = true;
        } else {
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        std::size_t newline;
        while ((newline = buffer.find('\n')) != std::string::npos) {
            const std::string line = buffer.substr(0, newline);
            buffer.erase(0, newline + 1);
            if (line.rfind("P ", 0) == 0) {
                char* end = nullptr;
                const double fraction = std::strtod(line.c_str() + 2, &end);
                std::string stage = end && *end == ' ' ? std::string(end + 1) : std::string();
                progress.report(fraction, stage);
            } else if (line.rfind("R ", 0) == 0) {
                result = probeResultFromJson(std::string_view(line).substr(2));
            }
        }
    }
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (cancelled)
        return cancelledResult(probe);
    if (WIFSIGNALED(status)) {
        ProbeResult r = failedResult(probe, "the child process died: " + signalText(WTERMSIG(status)));
        r.set("child_signal", static_cast<std::int64_t>(WTERMSIG(status)));
        r.notes.push_back("the search ran in a child process, so the caller survived");
        return r;
    }
    if (!result) {
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return failedResult(probe, "the child process exited with status " + std::to_string(code) + " without a result");
    }
    return *result;
}

} // namespace detail

int runProbeWorker(int inFd, int outFd)
{
    // A work order is a few KiB (the plan request as JSON); more is refused unread (issue 13:
    // 200 MB on stdin took 275 MB).
    constexpr std::size_t kMaxWorkOrderBytes = 4u << 20;
    std::string order;
    char chunk[4096];
    bool tooLarge = false;
    for (;;) {
        const ssize_t n = ::read(inFd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (order.size() + static_cast<std::size_t>(n) > kMaxWorkOrderBytes) {
            tooLarge = true;
            break;
        }
        order.append(chunk, static_cast<std::size_t>(n));
    }
    detail::PipeProgress progress(outFd);
    const ProbeResult result = tooLarge ? failedResult("worker", "work order larger than " + std::to_string(kMaxWorkOrderBytes) + " bytes")
                                        : detail::executeWorkOrder(order, progress);
    return detail::writeAll(outFd, "R " + probeResultToJson(result, -1) + "\n") ? 0 : 1;
}

} // namespace headroom::probes
