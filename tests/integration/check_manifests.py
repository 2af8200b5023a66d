#!/usr/bin/env python3
"""check_manifests.py: an offline check of deploy/kubernetes/*.json (Debian 12 ships no kubectl;
stdlib only). The manifests are JSON, which kubectl apply -f takes as is.

  check_manifests.py DIR [HELP-FILE...]
      Each HELP-FILE is a `hull serve --help` or `hull worker --help` text: every --flag a hull
      container passes must appear in the help of its subcommand (named by the file's first line).
      Prints one line per problem and exits 1 if any; else prints what it checked, exit 0.

Checked: every object has apiVersion, kind, metadata.name; a Deployment's or StatefulSet's
selector matches its pod labels; every container has an image with a tag other than latest; the
hull containers share one image; every volumeMount names a volume of its pod; every secretKeyRef
and secret volume names a Secret of DIR with that key; every $(VAR) in args is an env of the
container; the Service's selector finds a workload and its targetPort is one of that workload's
container ports; hull serve: replicas >= 2, a readiness probe on /readyz and a liveness probe on a
declared port, --listen's port is the container port, --node-id from the pod name, --advertise
from the pod IP, the database URL from a Secret; every hull container: the sandbox's security
context (hostUsers false, seccomp and AppArmor Unconfined, procMount Unmasked, capabilities: drop
ALL, add SYS_ADMIN, SETUID, SETGID; not privileged).
"""
import json
import os
import re
import sys

problems = []


def bad(msg):
    problems.append(msg)


def load(d):
    objs = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json"):
            continue
        try:
            doc = json.load(open(os.path.join(d, name)))
        except ValueError as e:
            bad(f"{name}: not JSON: {e}")
            continue
        for o in doc.get("items", []) if doc.get("kind") == "List" else [doc]:
            objs.append((name, o))
    return objs


def flags_of(args):
    return [a for a in args if a.startswith("--")]


def main():
    d = sys.argv[1]
    helps = {}
    for f in sys.argv[2:]:
        text = open(f).read()
        m = re.match(r"Usage: hull (\w+)", text)
        if m:
            helps[m.group(1)] = set(re.findall(r"(--[a-z][a-z0-9-]*)", text))
    objs = load(d)
    secrets = {}
    for name, o in objs:
        where = f"{name}: {o.get('kind')} {o.get('metadata', {}).get('name')}"
        for k in ("apiVersion", "kind"):
            if not o.get(k):
                bad(f"{where}: no {k}")
        if not o.get("metadata", {}).get("name"):
            bad(f"{where}: no metadata.name")
        if o.get("kind") == "Secret":
            secrets[o["metadata"]["name"]] = set(o.get("stringData", {})) | set(o.get("data", {}))
    workloads, images = [], set()
    for name, o in objs:
        if o.get("kind") not in ("Deployment", "StatefulSet", "DaemonSet"):
            continue
        where = f"{name}: {o['kind']} {o['metadata']['name']}"
        spec = o.get("spec", {})
        pod = spec.get("template", {})
        plabels = pod.get("metadata", {}).get("labels", {})
        sel = spec.get("selector", {}).get("matchLabels", {})
        if not sel or any(plabels.get(k) != v for k, v in sel.items()):
            bad(f"{where}: selector.matchLabels {sel} does not match the pod labels {plabels}")
        pspec = pod.get("spec", {})
        vols = {v["name"]: v for v in pspec.get("volumes", [])}
        vols.update({t["metadata"]["name"]: {} for t in spec.get("volumeClaimTemplates", [])})
        for v in vols.values():
            s = v.get("secret")
            if s:
                for it in s.get("items", []):
                    if it["key"] not in secrets.get(s["secretName"], set()):
                        bad(f"{where}: volume {v['name']}: no key {it['key']} in a Secret {s['secretName']}")
        ports = set()
        for c in pspec.get("containers", []):
            cw = f"{where}: container {c.get('name')}"
            img = c.get("image", "")
            if not re.match(r"^[^:@\s]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$", img) or img.endswith(":latest"):
                bad(f"{cw}: image {img!r} has no tag (or latest)")
            for m in c.get("volumeMounts", []):
                if m["name"] not in vols:
                    bad(f"{cw}: volumeMount {m['name']} names no volume of the pod")
            env = {}
            for e in c.get("env", []):
                env[e["name"]] = e
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref and ref["key"] not in secrets.get(ref["name"], set()):
                    bad(f"{cw}: env {e['name']}: no key {ref['key']} in a Secret {ref['name']}")
            args = c.get("args", [])
            for a in args:
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
                    if var not in env:
                        bad(f"{cw}: args use $({var}), which is not an env of the container")
            cports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
            ports |= set(cports) | set(cports.values())
            for pr in ("readinessProbe", "livenessProbe"):
                hg = c.get(pr, {}).get("httpGet")
                if hg and hg.get("port") not in cports and hg.get("port") not in cports.values():
                    bad(f"{cw}: {pr} on port {hg.get('port')}, not a container port")
            if c.get("command") != ["hull"]:
                continue
            images.add(img)
            sub = args[0] if args else ""
            if sub in helps:
                for f in flags_of(args):
                    if f not in helps[sub]:
                        bad(f"{cw}: hull {sub} has no flag {f} (hull {sub} --help)")
            sc = c.get("securityContext", {})
            caps = sc.get("capabilities", {})
            if pspec.get("hostUsers") is not False:
                bad(f"{where}: hostUsers is not false (the pod's own user namespace)")
            if sc.get("seccompProfile", {}).get("type") != "Unconfined":
                bad(f"{cw}: seccompProfile is not Unconfined (the default refuses unshare, mount, pivot_root)")
            if sc.get("appArmorProfile", {}).get("type") != "Unconfined":
                bad(f"{cw}: appArmorProfile is not Unconfined (the default denies mount)")
            if sc.get("procMount") != "Unmasked":
                bad(f"{cw}: procMount is not Unmasked (a sandbox's procfs is refused under masked paths)")
            if "ALL" not in caps.get("drop", []) or not {"SYS_ADMIN", "SETUID", "SETGID"} <= set(caps.get("add", [])):
                bad(f"{cw}: capabilities must drop ALL and add SYS_ADMIN, SETUID, SETGID: {caps}")
            if sc.get("privileged"):
                bad(f"{cw}: privileged (the pod's user namespace and the capabilities above are enough)")
            if sub == "serve":
                if spec.get("replicas", 1) < 2:
                    bad(f"{where}: replicas {spec.get('replicas', 1)} (nodes: at least 2)")
                rp = c.get("readinessProbe", {}).get("httpGet", {})
                if rp.get("path") != "/readyz":
                    bad(f"{cw}: no readiness probe on /readyz")
                if not c.get("livenessProbe"):
                    bad(f"{cw}: no liveness probe")
                opt = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
                lp = opt.get("--listen", "").rsplit(":", 1)[-1]
                if not lp.isdigit() or int(lp) not in cports.values():
                    bad(f"{cw}: --listen {opt.get('--listen')} is not on a container port {sorted(cports.values())}")
                nid = re.fullmatch(r"\$\((\w+)\)", opt.get("--node-id", ""))
                if not nid or env.get(nid.group(1), {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "metadata.name":
                    bad(f"{cw}: --node-id is not the pod's name (an env from fieldRef metadata.name)")
                adv = re.search(r"\$\((\w+)\)", opt.get("--advertise", ""))
                if not adv or env.get(adv.group(1), {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "status.podIP":
                    bad(f"{cw}: --advertise is not built from the pod IP (an env from fieldRef status.podIP)")
                elif not opt["--advertise"].endswith(f":{lp}"):
                    bad(f"{cw}: --advertise {opt['--advertise']} is not on --listen's port {lp}")
                if "HULL_DB" not in env or "secretKeyRef" not in env["HULL_DB"].get("valueFrom", {}):
                    bad(f"{cw}: HULL_DB (the database URL) is not from a Secret")
                if "--db" in opt:
                    bad(f"{cw}: --db on the command line (the URL may hold a password: HULL_DB from a Secret)")
        workloads.append((where, plabels, ports))
    if len(images) > 1:
        bad(f"the hull containers use different images: {sorted(images)}")
    services = 0
    for name, o in objs:
        if o.get("kind") != "Service":
            continue
        services += 1
        where = f"{name}: Service {o['metadata']['name']}"
        sel = o.get("spec", {}).get("selector", {})
        found = [w for w in workloads if sel and all(w[1].get(k) == v for k, v in sel.items())]
        if not found:
            bad(f"{where}: its selector {sel} finds no workload")
        for p in o.get("spec", {}).get("ports", []):
            t = p.get("targetPort", p.get("port"))
            if found and not any(t in w[2] for w in found):
                bad(f"{where}: targetPort {t} is not a container port of {found[0][0]}")
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(objs)} objects, {len(workloads)} workloads, {services} services, {len(secrets)} secrets: as they should be")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
