#!/usr/bin/env python3
"""laya_runtime.serve on a two-node Ray cluster on this machine, end to end (docs/scale-out.md).

    tools/ray-scaleout-test.py [--build build] [--venv build-rayvenv] [--quick]

  1. a venv (tools/setup-test-venv.sh: ray[serve], typesafe-sdk[zstd]) with the build tree's
     laya_runtime on its path (a .pth file; LAYA_LIBRARY = the build's liblaya.so);
  2. two Ray nodes of 1 CPU each (`ray start --head`, `ray start --address`), both on 127.0.0.1,
     each in a process group of its own; the application deployed with 2 replicas, Ray's HTTP
     proxy on 127.0.0.1;
  3. typesafe-sdk against the proxy and against native laya-serve (same checkpoint): every answer
     equal, and the raw JSON equal to laya-serve's less `routing` / `x_jev_confidence`;
     401 / 422 / 413 the same;
  4. a bounded load of typesafe-sdk calls (threads); one replica killed (ray.kill) a third of the
     way in: every call answered correctly (the client may retry what the kill broke), the
     replica replaced;
  5. throughput (`hey`, count- and time-bounded): 1 and 2 replicas, native laya-serve with one
     1-thread worker and with its defaults; medians of --rounds runs, printed as JSON.
The nodes are stopped in every case (their process groups: TERM, then KILL); `ray stop` is not
used because it ends every Ray process on the machine, not only this script's. Exit 0 when every
check passed; the logs (Ray's included) stay in the printed directory when one failed. The head
node's servers listen on 127.0.0.1; the worker node's may listen on every interface (Ray has no
option for that); every connection this script makes is to 127.0.0.1.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build", help="a release build dir (liblaya, laya-serve, the tiny model)")
    p.add_argument("--venv", default="build-rayvenv")
    p.add_argument("--gcs-port", type=int, default=6390)
    p.add_argument("--http-port", type=int, default=8390)
    p.add_argument("--calls", type=int, default=3000, help="typesafe-sdk calls in the kill test")
    p.add_argument("--hey-requests", type=int, default=3200, help="requests per throughput run")
    p.add_argument("--hey-conns", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3, help="throughput runs per configuration")
    p.add_argument("--timeout", type=int, default=1500, help="seconds for the whole script")
    p.add_argument("--quick", action="store_true", help="1,200 calls, 640 requests, 1 round")
    a = p.parse_args()
    if a.quick:
        a.calls, a.hey_requests, a.rounds = 1200, 640, 1
    return a


def in_venv(a):
    """Re-runs this script with the venv's python (made first when missing)."""
    venv = os.path.join(ROOT, a.venv)
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    subprocess.run([os.path.join(ROOT, "tools", "setup-test-venv.sh"), venv], check=True, timeout=900)
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "laya_runtime_build_tree.pth"), "w") as f:
        f.write(os.path.join(ROOT, "python") + "\n")
    os.execv(py, [py] + sys.argv)


A = parse_args()
in_venv(A)

import http.client  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402

BUILD = os.path.join(ROOT, A.build)
LIB = os.path.join(BUILD, "runtime", "capi", "liblaya.so")
TINY = os.path.join(BUILD, "tests", "laya-tiny.laya")
SERVE_EXE = os.path.join(BUILD, "tools", "laya-serve")
os.environ["LAYA_LIBRARY"] = LIB  # the Ray nodes' workers inherit it
KEY = "k-ray"
RAY = os.path.join(os.path.dirname(sys.executable), "ray")
failures = []
results = {}
started_groups = []  # process group ids this script made
ray_groups = []  # those of the Ray nodes
TMP = []
deadline = time.monotonic() + A.timeout


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def left():
    s = deadline - time.monotonic()
    if s <= 0:
        raise TimeoutError("the script's --timeout passed")
    return s


def wait_for(cond, seconds, what, must=True):
    end = time.monotonic() + min(seconds, left())
    while time.monotonic() < end:
        try:
            if cond():
                return True
        except Exception:  # noqa: BLE001 -- not up yet
            pass
        time.sleep(0.5)
    if must:
        raise TimeoutError(what)
    return False


def start_group(cmd, log, env=None):
    """A command in a new session (its own process group), output to `log`."""
    p = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,
                         start_new_session=True)
    started_groups.append(p.pid)
    return p


def stop_groups(groups=None):
    groups = list(started_groups if groups is None else groups)
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        alive = []
        for g in groups:
            try:
                os.killpg(g, sig)
                alive.append(g)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        while alive and time.monotonic() < end:
            alive = [g for g in alive if _group_alive(g)]
            time.sleep(0.5)
        if not alive:
            break
    left_over = [g for g in groups if _group_alive(g)]
    for g in groups:
        if g not in left_over and g in started_groups:
            started_groups.remove(g)
    print("stopped process groups %s%s" % (groups, "" if not left_over else "; STILL RUNNING: %s" % left_over),
          flush=True)
    if left_over:
        failures.append("process groups still running: %s" % left_over)


def _group_alive(g):
    try:
        os.killpg(g, 0)
    except ProcessLookupError:
        return False
    # zombies of our own children count as gone
    out = subprocess.run(["ps", "-e", "-o", "pgid=,stat="], capture_output=True, text=True).stdout
    return any(f[0] == str(g) and not f[1].startswith("Z") for f in (l.split() for l in out.splitlines())
               if len(f) == 2)


def request(port, method, path, body=None, headers=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def start_native(tmp, args, name):
    p = start_group([SERVE_EXE, "--model", "support=" + TINY, "--host", "127.0.0.1", "--port", "0",
                     "--max-concurrent", "256"] + args, os.path.join(tmp, name + ".log"),
                    env=dict(os.environ, LAYA_API_KEY=KEY))
    port = []

    def listening():
        m = re.search(r"listening on http://[\d.]+:(\d+)", open(os.path.join(tmp, name + ".log")).read())
        if m:
            port.append(int(m.group(1)))
        return bool(m)
    wait_for(listening, 60, "laya-serve did not start")
    return p, port[0]


def stop_native(p):
    os.killpg(p.pid, signal.SIGTERM)
    p.wait(timeout=30)
    started_groups.remove(p.pid)


def strip_extras(v):
    if isinstance(v, dict):
        return {k: strip_extras(x) for k, x in v.items() if k not in ("routing", "x_jev_confidence")}
    if isinstance(v, list):
        return [strip_extras(x) for x in v]
    return v


def hey(port, body_file, n, conns):
    """requests/s of one count-bounded hey run (and its time bound); every answer must be 200."""
    cmd = ["hey", "-n", str(n), "-c", str(conns), "-t", "30", "-m", "POST", "-T", "application/json",
           "-H", "Authorization: Bearer " + KEY, "-D", body_file,
           "http://127.0.0.1:%d/v1/systemone" % port]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=min(300, left())).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    codes = dict((int(c), int(k)) for c, k in re.findall(r"\[(\d+)\]\s+(\d+) responses", out))
    lat = re.search(r"Average:\s+([\d.]+) secs", out)
    return rps, codes, float(lat.group(1)) * 1000 if lat else None


def cpu_by_process(groups):
    """CPU seconds so far of the processes in `groups` and their descendants (Ray's workers move to
    process groups of their own), by name (/proc/PID/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()  # from the 3rd field on: state, ppid, pgrp, ...
        procs[int(pid)] = (int(f[1]), int(f[2]), cmd, (int(f[11]) + int(f[12])) / tick)
    ours = {p for p, (_, pg, _, _) in procs.items() if pg in groups}
    grew = True
    while grew:
        more = {p for p, (pp, _, _, _) in procs.items() if pp in ours and p not in ours}
        ours |= more
        grew = bool(more)
    out = {}
    for p in ours:
        cmd = procs[p][2]
        m = re.match(r"ray::[A-Za-z_]+", cmd)
        name = m.group(0) if m else os.path.basename(cmd)
        if name.startswith("python"):
            name = "other Ray daemons (python)"
        out[name] = out.get(name, 0.0) + procs[p][3]
    return out


def throughput(label, port, body_file, cpu_groups=None):
    before = cpu_by_process(cpu_groups) if cpu_groups else None
    runs = []
    for _ in range(A.rounds):
        rps, codes, avg_ms = hey(port, body_file, A.hey_requests, A.hey_conns)
        n = A.hey_requests // A.hey_conns * A.hey_conns  # hey sends n / c per connection
        check(codes == {200: n}, "%s: %d requests, all 200 (%s)" % (label, n, codes))
        runs.append(rps)
    med = statistics.median(runs)
    results[label] = {"requests_per_s_median": round(med, 1), "runs": [round(r, 1) for r in runs]}
    if before is not None:  # CPU ms per request of each Ray process (those not running count 0)
        after = cpu_by_process(cpu_groups)
        n = A.rounds * (A.hey_requests // A.hey_conns * A.hey_conns)
        per = {k: round(1000 * (v - before.get(k, 0)) / n, 2) for k, v in after.items()}
        results[label]["cpu_ms_per_request"] = dict(sorted(((k, v) for k, v in per.items() if v >= 0.05),
                                                           key=lambda kv: -kv[1]))
    print("     %s: %.1f requests/s (median of %s)" % (label, med, [round(r, 1) for r in runs]), flush=True)
    return med


# Two nodes of 1 CPU on this machine, on 127.0.0.1 alone. Ray swaps a loopback address for the
# machine's outward one (resolve_ip_for_localhost) unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which
# the head node and this driver take (the head's servers then listen on 127.0.0.1); a worker node
# refuses to start with it, so its `ray start` runs with that one function made the identity.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
WORKER_NODE = ("import sys, ray._private.services as s; s.resolve_ip_for_localhost = lambda h: h; "
               "from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()")


def main():
    import ray
    from ray import serve
    import typesafe_sdk
    from typesafe_sdk import Choice, Noul, RetryPolicy, Score, TypeSafeAPIError, TypeSafeClient
    from laya_runtime import serve as lserve

    questions = {
        "department": Choice(instructions="Which team should take this ticket?",
                             criteria={"billing": "money, invoices, refunds", "support": "broken things",
                                       "sales": "buying more"}),
        "urgency": Score(instructions="How urgent is it?", criteria=["can wait", "today", "now"]),
        "refund": Noul(instructions="Does the customer ask for a refund?"),
    }
    states = ["ticket %d: I was charged %d times for invoice %d" % (i, i % 4 + 2, 1000 + i) for i in range(12)]
    states += [{"ticket": "The app crashes when I log in. " * 60, "plan": "pro"}, "short text"]  # zstd, plain

    tmp = tempfile.mkdtemp(prefix="laya-ray-")
    TMP.append(tmp)
    print("logs: " + tmp, flush=True)
    results["machine"] = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                                        capture_output=True, text=True).stdout.strip()
    results["cpus"] = os.cpu_count()
    gcs = "127.0.0.1:%d" % A.gcs_port
    common = ["--num-cpus=1", "--disable-usage-stats", "--block", "--temp-dir=" + os.path.join(tmp, "ray")]
    start_group([RAY, "start", "--head", "--port=%d" % A.gcs_port, "--include-dashboard=false",
                 "--ray-client-server-port=%d" % (A.gcs_port + 1)] + common, os.path.join(tmp, "head.log"),
                env=dict(os.environ))
    wait_for(lambda: "--block" in open(os.path.join(tmp, "head.log")).read(), 90, "the head node did not start")
    start_group([sys.executable, "-c", WORKER_NODE, "start", "--address=" + gcs] + common,
                os.path.join(tmp, "worker.log"), env=dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="1"))
    ray_groups.extend(started_groups)
    ray.init(address=gcs, log_to_driver=False)
    wait_for(lambda: len([n for n in ray.nodes() if n["Alive"]]) == 2, 90, "the second node did not join")
    nodes = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}
    check(sorted(nodes.values()) == ["127.0.0.1", "127.0.0.1"], "two nodes, both on 127.0.0.1: %s" % nodes)

    serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": A.http_port})

    def deploy(replicas):
        serve.run(lserve.build_app(TINY, name="support", replicas=replicas, api_key=KEY),
                  name="laya", route_prefix="/")
        wait_for(lambda: len(replica_actors()) == replicas and request(A.http_port, "GET", "/ready")[0] == 200,
                 180, "%d replicas did not come up" % replicas)

    def replica_actors():
        """The live replicas: (name, node id). From the GCS's actor table (ray.util.state would
        need the dashboard, left out to spare the two cores)."""
        return [(x["Name"], x["Address"]["NodeID"]) for x in ray._private.state.actors().values()
                if x["State"] == "ALIVE" and x["ActorClassName"].startswith("ServeReplica:laya:LayaReplica")]

    t0 = time.monotonic()
    deploy(2)
    results["deploy_2_replicas_s"] = round(time.monotonic() - t0, 1)
    on = {node for _, node in replica_actors()}
    check(len(on) == 2, "the 2 replicas run on different nodes")

    # ---- answers: Ray against native laya-serve ----
    native, nport = start_native(tmp, [], "native")
    ray_c = TypeSafeClient(api_key=KEY, base_url="http://127.0.0.1:%d" % A.http_port)
    nat_c = TypeSafeClient(api_key=KEY, base_url="http://127.0.0.1:%d" % nport)
    check(typesafe_sdk.__version__ == "0.7.5", "typesafe-sdk 0.7.5")
    check([m.name for m in ray_c.models.list().models] == ["support"], "models.list through Ray")
    expected = {}
    for i, st in enumerate(states):
        r, n = ray_c.system_one(state=st, questions=questions), nat_c.system_one(state=st, questions=questions)
        expected[i] = n.model_dump()
        check(r.model_dump() == expected[i], "state %d: typesafe-sdk's answer through Ray == laya-serve's" % i)
    raw_same = 0
    for i, st in enumerate(states):
        body = json.dumps({"state": st, "questions": {k: q.model_dump(exclude_none=True) for k, q in questions.items()}})
        hdr = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
        s1, _, b1 = request(A.http_port, "POST", "/v1/systemone", body, hdr)
        s2, _, b2 = request(nport, "POST", "/v1/systemone", body, hdr)
        raw_same += s1 == s2 == 200 and json.loads(b1) == strip_extras(json.loads(b2))
        bb = json.dumps({"states": states[:5], "questions": json.loads(body)["questions"]})
        s1, _, b1 = request(A.http_port, "POST", "/v1/systemone/batch", bb, hdr) if i == 0 else (200, 0, b"")
        if i == 0:
            s2, _, b2 = request(nport, "POST", "/v1/systemone/batch", bb, hdr)
            check(s1 == s2 == 200 and json.loads(b1) == strip_extras(json.loads(b2)),
                  "/v1/systemone/batch through Ray == laya-serve's (less routing, x_jev_confidence)")
    check(raw_same == len(states), "raw JSON through Ray == laya-serve's less routing / x_jev_confidence: %d / %d"
          % (raw_same, len(states)))
    errs = {}
    for label, port in (("ray", A.http_port), ("native", nport)):
        base = "http://127.0.0.1:%d" % port
        got = []
        for call in (lambda: TypeSafeClient(api_key="wrong", base_url=base).system_one(state="x", questions=questions),
                     lambda: TypeSafeClient(api_key=KEY, base_url=base).system_one(
                         state="x", questions=questions, extra_body={"max_len": 0}),
                     lambda: TypeSafeClient(api_key=KEY, base_url=base).system_one(
                         state="x" * (3 << 20), questions=questions)):
            try:
                call()
                got.append(None)
            except TypeSafeAPIError as e:
                got.append((type(e).__name__, e.status, str(e).split("request id")[0][:200]))
        errs[label] = got
    check([e and e[1] for e in errs["ray"]] == [401, 422, 413], "401 / 422 / 413 through Ray: %s" % errs["ray"])
    check([e and e[:2] for e in errs["ray"]] == [e and e[:2] for e in errs["native"]],
          "the same error classes as laya-serve's: %s" % errs["native"])

    # ---- @serve.batch in the cluster: 32 requests at once share batches (x-laya-batch: ID/SIZE) ----
    burst = []
    hdr = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
    qjson = {k: q.model_dump(exclude_none=True) for k, q in questions.items()}

    def one(i):
        st, h, _ = request(A.http_port, "POST", "/v1/systemone", json.dumps({"state": states[i % 12], "questions": qjson}), hdr)
        burst.append((st, int(h.get("x-laya-batch", "0/0").split("/")[1])))
    ts = [threading.Thread(target=one, args=(i,)) for i in range(32)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    sizes = sorted(b for _, b in burst)
    check(len(burst) == 32 and all(st == 200 for st, _ in burst) and max(sizes) > 1 and max(sizes) <= 16,
          "32 requests at once: batches of up to 16 (sizes seen: %s)" % sorted(set(sizes)))
    results["burst_batch_sizes"] = sorted(set(sizes))

    # ---- a replica killed under load: no call lost ----
    retries = []

    class Count(logging.Handler):
        def emit(self, record):
            if " retry " in record.getMessage():
                retries.append(record.getMessage())
    sdk_log = logging.getLogger("typesafe_sdk")
    sdk_log.setLevel(logging.INFO)
    sdk_log.addHandler(Count())
    sdk_log.propagate = False
    done, wrong, lost, lock = [0], [], [], threading.Lock()
    next_call = [0]
    killed = []
    policy = RetryPolicy(max_retries=5, backoff_initial=0.2, backoff_max=2.0, timeout=60)

    def worker():
        c = TypeSafeClient(api_key=KEY, base_url="http://127.0.0.1:%d" % A.http_port, retry=policy)
        while time.monotonic() < load_end:
            with lock:
                i = next_call[0]
                next_call[0] += 1
            if i >= A.calls:
                return
            k = i % len(states)
            try:
                r = c.system_one(state=states[k], questions=questions)
                ok = r.model_dump() == expected[k]
            except Exception as e:  # noqa: BLE001 -- a lost call
                with lock:
                    lost.append("%d: %s" % (i, repr(e)[:200]))
                continue
            with lock:
                done[0] += 1
                if not ok:
                    wrong.append(i)

    load_end = time.monotonic() + min(300, left())
    victims = replica_actors()
    threads = [threading.Thread(target=worker) for _ in range(16)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    wait_for(lambda: done[0] >= A.calls // 3, 120, "the load did not reach a third")
    victim = victims[0][0]
    ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
    killed.append((victim, done[0]))
    t_kill = time.monotonic()
    replaced = []

    def watch():  # when the replacement is up, counted from the kill
        if wait_for(lambda: len(replica_actors()) == 2 and victim not in [n for n, _ in replica_actors()],
                    180, "", must=False):
            replaced.append(time.monotonic() - t_kill)
    watcher = threading.Thread(target=watch)
    watcher.start()
    gone = wait_for(lambda: victim not in [n for n, _ in replica_actors()], 30, "", must=False)
    at_gone = done[0]
    for t in threads:
        t.join(timeout=max(1, load_end - time.monotonic() + 70))
    took = time.monotonic() - t0
    check(not any(t.is_alive() for t in threads), "the load finished in its time bound")
    check(gone and at_gone < A.calls, "the replica died mid-load (%d of %d calls answered then)" % (at_gone, A.calls))
    print("     killed %s after %d calls; %d calls in %.1f s, %d retries by the client" % (
        victim, killed[0][1], done[0], took, len(retries)), flush=True)
    check(done[0] == A.calls and not lost, "every call answered (%d / %d; lost: %s)" % (done[0], A.calls, lost[:3]))
    check(not wrong, "every answer equals laya-serve's (wrong: %s)" % wrong[:5])
    results["kill_test"] = {"calls": A.calls, "killed_after": killed[0][1], "dead_after": at_gone,
                            "answered": done[0], "lost": len(lost), "wrong": len(wrong),
                            "client_retries": len(retries), "seconds": round(took, 1)}
    watcher.join(timeout=max(1, min(180, left())))
    check(bool(replaced), "the killed replica was replaced (2 replicas again, %.1f s after the kill)"
          % (replaced[0] if replaced else -1))
    results["kill_test"]["replaced_after_s"] = round(replaced[0], 1) if replaced else None

    # ---- throughput: 1 and 2 replicas, native laya-serve ----
    body_file = os.path.join(tmp, "body.json")
    with open(body_file, "w") as f:
        json.dump({"state": states[0], "questions": {k: q.model_dump(exclude_none=True) for k, q in questions.items()}}, f)
    results["hey"] = {"requests": A.hey_requests, "connections": A.hey_conns, "rounds": A.rounds}
    throughput("ray_2_replicas", A.http_port, body_file)
    deploy(1)
    throughput("ray_1_replica", A.http_port, body_file, cpu_groups=set(ray_groups))
    # Native laya-serve with Ray stopped, so that nothing else runs on the two cores.
    serve.shutdown()
    ray.shutdown()
    stop_groups(ray_groups)
    throughput("native_default", nport, body_file)  # 1 worker, every core's threads
    stop_native(native)
    native1, nport1 = start_native(tmp, ["--threads", "1", "--workers", "1"], "native1")
    throughput("native_1_thread", nport1, body_file)
    native2, nport2 = start_native(tmp, ["--threads", "1", "--workers", "2"], "native2")
    stop_native(native1)
    throughput("native_2_workers_1_thread", nport2, body_file)
    stop_native(native2)


def on_signal(sig, _):
    raise KeyboardInterrupt("signal %d" % sig)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_signal)
    for path in (LIB, TINY, SERVE_EXE):
        if not os.path.exists(path):
            sys.exit("missing %s: build first (meson setup %s --buildtype=release && ninja -C %s)" % (path, A.build, A.build))
    try:
        main()
    except BaseException as e:  # noqa: BLE001 -- reported, then the cluster is stopped
        failures.append("aborted: %r" % e)
        print("FAIL aborted: %r" % e, flush=True)
    finally:
        stop_groups()  # first: a driver whose cluster is gone can abort in ray.shutdown()
    results["failures"] = failures
    print(json.dumps(results, indent=1), flush=True)
    if TMP and not failures:
        import shutil
        shutil.rmtree(TMP[0], ignore_errors=True)
    os._exit(1 if failures else 0)  # not through Ray's atexit handlers (the cluster is gone)
