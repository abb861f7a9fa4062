"""The checks between XInference's start-up steps, for the launch script infertune writes.

  python gate.py status ENDPOINT PID
      waits until the server at ENDPOINT answers GET /status; exits 1 when process PID (the
      server) is gone first.
  python gate.py link FAMILY_JSON
      creates, under $XINFERENCE_HOME/cache/v2, the link to the local model that each replica
      of a launch would otherwise create itself: XInference 4.1.0 checks for the link, then
      makes it (xinference/model/llm/cache_manager.py, `cache_uri`), so two replicas starting
      together race and the second fails with "File exists". One link per quantization the
      registered family lists, named as `get_cache_dir_for_spec` names it; an existing link
      is kept.
  python gate.py ready ENDPOINT UID REPLICAS READY_FILE [SETTING ...]
      waits until model UID has REPLICAS replicas and every one is READY
      (GET /v1/models/UID/replicas), checks that the engine applied each SETTING (XInference
      only logs "Failed to set the param <k>" for one it did not), then writes READY_FILE,
      which infertune's readiness waits for. A replica in ERROR ends the wait.

Every failure prints one line starting `error: ` and exits 1. Standard library only.
"""

import glob
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

POLL_S = 0.5
REQUEST_TIMEOUT_S = 30
# The llama.cpp engine passes these itself at every launch (some no longer exist in
# xllamacpp; n_threads is applied separately), so their "Failed to set" lines are noise.
BUILT_IN_PARAMS = {"use_mmap", "use_mlock", "n_threads", "reasoning_content", "n_gqa"}


def fail(message):
    print(f"error: {message}", flush=True)
    sys.exit(1)


def get(endpoint, path):
    """(status, parsed JSON or None); (0, None) when nothing answers."""
    try:
        with urllib.request.urlopen(endpoint + path, timeout=REQUEST_TIMEOUT_S) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except OSError:
        return 0, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    # A child that exited but was not reaped yet is a zombie: gone all the same.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def status(endpoint, pid):
    while get(endpoint, "/status")[0] != 200:
        if not alive(int(pid)):
            fail(f"the XInference server (process {pid}) exited before it answered /status")
        time.sleep(POLL_S)


def link(family_file):
    home = os.environ.get("XINFERENCE_HOME")
    if not home:
        fail("XINFERENCE_HOME is not set: the launch script sets it for the server")
    with open(family_file) as f:
        family = json.load(f)
    name = family["model_name"].replace(".", "_")
    for spec in family["model_specs"]:
        uri = spec["model_uri"]
        if not uri.startswith("file://"):
            continue
        target = uri[len("file://"):].rstrip("/")
        entry = "{}-{}-{}b-{}".format(
            name, spec["model_format"], spec["model_size_in_billions"], spec["quantization"]
        )
        path = os.path.join(home, "cache", "v2", entry)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.lexists(path):
            os.symlink(target, path, target_is_directory=True)


def replica_failure(uid, replica):
    message = replica.get("error_message") or "no message"
    number = replica.get("replica_id")
    if "Remote server" in message and "closed" in message:
        return (
            f"XInference replica {number} of {uid} died, its socket closed (killed, most "
            f"often by the kernel for want of memory): {message}"
        )
    return f"XInference replica {number} of {uid} failed: {message}"


def logs(home):
    """XInference's log files, and the launch's own log (this process's stdout) when a file."""
    paths = sorted(glob.glob(os.path.join(home, "logs", "**", "*.log"), recursive=True))
    stdout = os.path.realpath("/proc/self/fd/1")
    if os.path.isfile(stdout):
        paths.append(stdout)
    return paths


def ignored_settings(home, settings):
    wanted = set(settings) - BUILT_IN_PARAMS
    pattern = re.compile(r"Failed to set the param (\S+) = .*")
    found = []
    for path in logs(home):
        with open(path, errors="replace") as log:
            for line in log:
                match = pattern.search(line)
                if match and match.group(1) in wanted:
                    found.append(match.group(0).strip())
    return found


def ready(endpoint, uid, replicas, ready_file, *settings):
    last = None
    while True:
        code, answer = get(endpoint, f"/v1/models/{uid}/replicas")
        if code == 200 and isinstance(answer, list):
            states = [r.get("status") for r in answer]
            for replica in answer:
                if replica.get("status") == "ERROR":
                    fail(replica_failure(uid, replica))
            if states != last:
                print(f"[infertune] replicas of {uid}: {states}", flush=True)
                last = states
            if len(states) >= int(replicas) and all(s == "READY" for s in states):
                break
        elif code == 0:
            fail(f"the XInference server stopped answering while {uid} loaded")
        time.sleep(POLL_S)
    ignored = ignored_settings(os.environ.get("XINFERENCE_HOME", "."), settings)
    if ignored:
        fail(f"XInference did not apply a setting: {ignored[0]}")
    with open(ready_file, "w") as f:
        f.write(uid + "\n")
    print(f"[infertune] every replica of {uid} is READY", flush=True)


if __name__ == "__main__":
    commands = {"status": status, "link": link, "ready": ready}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        fail(f"usage: {sys.argv[0]} status|link|ready ...")
    commands[sys.argv[1]](*sys.argv[2:])
