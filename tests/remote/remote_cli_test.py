"""headroom-cli reading models over HTTP (libcurl) from a loopback server, with faults.
Usage: remote_cli_test.py HEADROOM_CLI FIXTURES_DIR SCRATCH_DIR
Builds a hub-shaped folder from the fixtures (Llama-2-7b-hf config and index, with shards whose
safetensors headers give the real shapes of Llama-2-7b as sparse files of their real length), and
checks what comes back and what was asked for. Exit 0 when every case passes; no network beyond
127.0.0.1; every command is bounded by a timeout."""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

import ggufsplit
import rangeserver

cli, fixtures, scratch = sys.argv[1:4]
failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures.append(name)


def llama2_shape(name):
    """Shapes of Llama-2-7b (hidden 4096, intermediate 11008, vocab 32000, head_dim 128)."""
    if name.endswith("rotary_emb.inv_freq"):
        return "F32", [64]
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return "F16", [32000, 4096]
    if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight")):
        return "F16", [4096, 4096]
    if name.endswith(("gate_proj.weight", "up_proj.weight")):
        return "F16", [11008, 4096]
    if name.endswith("down_proj.weight"):
        return "F16", [4096, 11008]
    return "F16", [4096]  # the norms


def write_safetensors(path, tensors):
    """A safetensors file of its real length: header bytes, then a hole for the data."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors:
        n = (4 if dtype == "F32" else 2)
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + offset)


def build_root(root):
    shutil.rmtree(root, ignore_errors=True)
    repo = os.path.join(root, "hub", "meta-llama", "Llama-2-7b-hf")
    os.makedirs(repo)
    src = os.path.join(fixtures, "hf", "Llama-2-7b-hf")
    shutil.copy(os.path.join(src, "config.json"), repo)
    shutil.copy(os.path.join(src, "model.safetensors.index.json"), repo)
    index = json.load(open(os.path.join(src, "model.safetensors.index.json")))
    shards = {}
    for tensor, shard in index["weight_map"].items():
        shards.setdefault(shard, []).append((tensor, llama2_shape(tensor)))
    for shard, tensors in shards.items():
        write_safetensors(os.path.join(repo, shard), sorted(tensors))
    # A one-file repo: config + model.safetensors (embed and lm_head only).
    tiny = os.path.join(root, "hub", "tiny", "llama")
    os.makedirs(tiny)
    shutil.copy(os.path.join(src, "config.json"), tiny)
    write_safetensors(os.path.join(tiny, "model.safetensors"),
                      [("lm_head.weight", ("F16", [32000, 4096])), ("model.embed_tokens.weight", ("F16", [32000, 4096]))])
    # A repo with a config and no weights file: the hub answers 404 with an error page longer
    # than the 8 bytes a header range asks for (issue 14 review: reported as an oversized body).
    bare = os.path.join(root, "hub", "tiny", "config-only")
    os.makedirs(bare)
    shutil.copy(os.path.join(src, "config.json"), bare)
    os.makedirs(os.path.join(root, "files"))
    stories = os.path.join(fixtures, "gguf", "stories260K.gguf")
    shutil.copy(stories, os.path.join(root, "files"))
    # A URL of a split model, and a GGUF repo as llama.cpp -hf reads them: presets in file names,
    # a projector that is never the model, and a preset split in a subfolder.
    os.makedirs(os.path.join(root, "files", "split"))
    ggufsplit.split(stories, os.path.join(root, "files", "split", "stories260K"), 2)
    gguf_repo = os.path.join(root, "hub", "ggml-org", "stories260K-GGUF")
    os.makedirs(os.path.join(gguf_repo, "Q8_0"))
    shutil.copy(stories, os.path.join(gguf_repo, "mmproj-stories260K-Q4_K_M.gguf"))
    shutil.copy(stories, os.path.join(gguf_repo, "stories260K-F16.gguf"))
    shutil.copy(stories, os.path.join(gguf_repo, "stories260K-Q4_K_M.gguf"))
    ggufsplit.split(stories, os.path.join(gguf_repo, "Q8_0", "stories260K-Q8_0"), 3)
    with open(os.path.join(gguf_repo, "README.md"), "w") as f:
        f.write("stories260K in several presets\n")
    return index["metadata"]["total_size"]


def run(args, cache, extra_env=None, timeout=60):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(scratch, "home"),
           "XDG_CACHE_HOME": cache, "HEADROOM_HTTP_TIMEOUT_S": "2", "HEADROOM_HTTP_RETRIES": "1",
           "HEADROOM_HTTP_BACKOFF_MS": "10", "HF_ENDPOINT": base}
    env.update(extra_env or {})
    t0 = time.monotonic()
    p = subprocess.run([cli] + args, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


root = os.path.join(scratch, "remote-root")
total_size = build_root(root)
server, base = rangeserver.start(root)
cache = os.path.join(scratch, "remote-cache")
shutil.rmtree(cache, ignore_errors=True)
log = rangeserver.Handler.log

# 1. A sharded repo: config, index, and two range requests per shard; never the weights.
rc, out, err, _ = run(["plan", "-m", "hf://meta-llama/Llama-2-7b-hf", "-c", "24GiB", "--json"], cache,
                      {"HF_TOKEN": "hf_secret"})
check("sharded repo plans", rc == 0 and '"weights_bytes": %d' % total_size in out, err + out[:400])
ranges = [r for (_, r, _) in log if r]
check("two ranges per shard", len(ranges) == 4 and ranges[0] == "bytes=0-7", str(log))
asked = sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1 for r in ranges)
check("headers only", asked < 100_000, "asked for %d bytes" % asked)
check("token sent to the hub", all(a == "Bearer hf_secret" for (_, _, a) in log), str(log))
# 2. Cached: no request the second time.
before = len(log)
rc, out, err, _ = run(["plan", "-m", "meta-llama/Llama-2-7b-hf", "-c", "24GiB", "--json"], cache)
check("second read from the cache", rc == 0 and len(log) == before and '"weights_bytes": %d' % total_size in out,
      "%d new requests; %s" % (len(log) - before, err))
# 3. A single-file repo.
rc, out, err, _ = run(["plan", "-m", "tiny/llama", "-c", "24GiB", "--json"], cache)
check("single-file repo", rc == 0 and '"weights_bytes": 524288000' in out, err + out[:300])
# 4. A GGUF URL: the header grows by range requests; the token is not sent to other URLs.
del log[:]
rc, out, err, _ = run(["plan", "-m", base + "/files/stories260K.gguf", "-c", "8GiB", "--json"], cache,
                      {"HF_TOKEN": "hf_secret", "HF_ENDPOINT": "https://huggingface.invalid"})
check("gguf url", rc == 0 and '"weights_bytes": 1171200' in out, err + out[:300])
check("gguf never the whole file", all(r and int(r.split("-")[1]) < 4 << 20 for (_, r, _) in log), str(log))
check("no token to another host", all(a is None for (_, _, a) in log), str(log))

# 5. GGUF repos (llama.cpp -hf's rule) and split files: every part's header, never the data.
def gguf_case(name, model, expect_paths, extra_env=None):
    c = os.path.join(scratch, "cache-gguf-" + name.replace(" ", "-"))
    shutil.rmtree(c, ignore_errors=True)
    del log[:]
    rc, out, err, _ = run(["plan", "-m", model, "-c", "8GiB", "--json"], c, extra_env)
    check("gguf " + name, rc == 0 and '"weights_bytes": 1171200' in out, err + out[:300])
    files = sorted({p.split("?")[0] for (p, r, _) in log if r})
    check("gguf " + name + " reads " + ", ".join(expect_paths), files == sorted(expect_paths), str(files))
    check("gguf " + name + " headers only", all(r and int(r.split("-")[1]) < 4 << 20 for (p, r, _) in log if p.split("?")[0].endswith(".gguf")), str(log))
    return c


repo_url = "/ggml-org/stories260K-GGUF/resolve/main/"
gguf_case("preset", "hf://ggml-org/stories260K-GGUF:Q4_K_M", [repo_url + "stories260K-Q4_K_M.gguf"], {"HF_TOKEN": "hf_secret"})
check("gguf preset: the file list from the tree API, with the token",
      any(p == "/api/models/ggml-org/stories260K-GGUF/tree/main?recursive=true" and a == "Bearer hf_secret" for (p, _, a) in log), str(log))
split_cache = gguf_case("split preset", "hf://ggml-org/stories260K-GGUF@main:q8_0",
                        [repo_url + "Q8_0/stories260K-Q8_0-%05d-of-00003.gguf" % k for k in (1, 2, 3)])
gguf_case("default preset", "ggml-org/stories260K-GGUF", [repo_url + "stories260K-Q4_K_M.gguf"])
gguf_case("split url", base + "/files/split/stories260K-00002-of-00002.gguf",
          ["/files/split/stories260K-%05d-of-00002.gguf" % k for k in (1, 2)])
del log[:]
rc, out, err, _ = run(["plan", "-m", "hf://ggml-org/stories260K-GGUF@main:q8_0", "-c", "8GiB", "--json"], split_cache)
check("gguf split preset from the cache", rc == 0 and not log and '"weights_bytes": 1171200' in out, "%d requests; %s" % (len(log), err))
rc, out, err, _ = run(["plan", "-m", "hf://ggml-org/stories260K-GGUF:IQ2_XXS", "-c", "8GiB"], os.path.join(scratch, "cache-gguf-none"))
check("gguf preset not in the repo", rc == 1 and "no GGUF file for the preset IQ2_XXS; the repo has " in err and
      "stories260K-Q4_K_M.gguf" in err, err)
# Retries: a 503 once is retried (HEADROOM_HTTP_RETRIES=1); without retries it is the error.
rc, out, err, _ = run(["plan", "-m", base + "/flaky/files/stories260K.gguf?try=1", "-c", "8GiB", "--json"],
                      os.path.join(scratch, "cache-flaky-1"))
check("retried after HTTP 503", rc == 0 and '"weights_bytes": 1171200' in out, err)
rc, out, err, _ = run(["plan", "-m", base + "/flaky/files/stories260K.gguf?try=2", "-c", "8GiB"],
                      os.path.join(scratch, "cache-flaky-2"), {"HEADROOM_HTTP_RETRIES": "0"})
check("no retries: HTTP 503", rc == 1 and "HTTP 503" in err, err)

# 6. Faults, each with a fresh cache and a bounded time.
faults = [
    ("slow", "timed out", ["-m", base + "/slow/files/stories260K.gguf"], {}),
    ("truncate", "transfer closed with", ["-m", base + "/truncate/files/stories260K.gguf"], {}),
    ("shortrange", "received", ["-m", base + "/shortrange/files/stories260K.gguf"], {}),
    # A whole small file for a range is fine; a 10 GB shard for its 8-byte length is cut off.
    ("norange", "more than the 8 bytes asked for", ["-m", "meta-llama/Llama-2-7b-hf"], {"HF_ENDPOINT": base + "/norange"}),
    ("error500", "HTTP 500", ["-m", base + "/error500/files/stories260K.gguf"], {}),
    ("gated", "set HF_TOKEN", ["-m", "meta-llama/Llama-2-7b-hf"], {"HF_ENDPOINT": base + "/gated"}),
    ("missing repo", "HTTP 404", ["-m", "no-org/no-model"], {}),
    ("missing revision", "HTTP 404", ["-m", "meta-llama/Llama-2-7b-hf@v9"], {}),
    ("missing weights", "/tiny/config-only/resolve/main/model.safetensors: HTTP 404", ["-m", "tiny/config-only"], {}),
    ("missing file", "/files/absent.gguf: HTTP 404", ["-m", base + "/files/absent.gguf"], {}),
]
for name, words, args, env in faults:
    fresh = os.path.join(scratch, "cache-" + name.replace(" ", "-"))
    shutil.rmtree(fresh, ignore_errors=True)
    rc, out, err, secs = run(["plan"] + args + ["-c", "8GiB"], fresh, env)
    check("fault " + name, rc == 1 and words in err and secs < 30, "rc %d in %.1f s: %s" % (rc, secs, err.strip()))
    print("     %.1f s: %s" % (secs, err.strip()[:300]))
    leftovers = [d for d, _, fs in os.walk(fresh) if "headroom-remote.json" in fs]
    check("fault " + name + " leaves no mirror", not leftovers, str(leftovers))

# 6b. The app reads a hub repo over HTTP too, through the same core code (issue 14 review: it said
# it "reads no models over HTTP"): its --model imports off the GUI thread; the server sees the
# app's requests for the repo's config.
app = os.path.join(os.path.dirname(cli), "headroom")
if os.path.exists(app):
    before = len(log)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(scratch, "home-app"),
           "XDG_CACHE_HOME": os.path.join(scratch, "cache-app"), "XDG_CONFIG_HOME": os.path.join(scratch, "config-app"),
           "HF_ENDPOINT": base, "QT_QPA_PLATFORM": "offscreen", "HEADROOM_HTTP_RETRIES": "0"}
    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    p = subprocess.run([app, "--model", "hf://tiny/llama", "--screenshot", os.path.join(scratch, "app-remote.png")],
                       env=env, capture_output=True, text=True, timeout=60)
    asked = [path for (path, _, _) in log[before:]]
    check("the app reads hf:// over HTTP", p.returncode == 0 and any("/tiny/llama/resolve/main/config.json" in a for a in asked),
          "rc %d, asked %s, %s" % (p.returncode, asked, p.stderr[-300:]))
else:
    print("SKIP the app reads hf:// over HTTP: no app built next to the CLI")

# 7. Offline: nothing listens; the error says so; a cached model still answers.
s = socket.socket()
s.bind(("127.0.0.1", 0))
dead = "http://127.0.0.1:%d" % s.getsockname()[1]
s.close()
rc, out, err, _ = run(["plan", "-m", dead + "/files/x.gguf", "-c", "8GiB"], os.path.join(scratch, "cache-offline"))
check("offline", rc == 1 and "offline?" in err, err)
rc, out, err, _ = run(["plan", "-m", "meta-llama/Llama-2-7b-hf", "-c", "24GiB", "--json"], cache,
                      {"HF_ENDPOINT": dead, "HF_HUB_OFFLINE": "1"})
check("offline from the cache", rc == 0 and '"weights_bytes": %d' % total_size in out, err)

server.shutdown()
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
