/**
 * The admission server: HTTPS, one path per kind ({@link validatingWebhooks}), answering
 * `admission.k8s.io/v1` AdmissionReviews with the kind's validator's verdict. It looks up the
 * facts some validators need ({@link AdmissionFacts}), reloads its serving certificate when the
 * files change (cert-manager rotates them in place), and never lets one request take it down.
 *
 * HTTP answers: 404 unknown path, 405 not POST, 415 not JSON, 413 body over the limit, 400 a body
 * that is no AdmissionReview v1 with a request uid. A review it can read is always answered with
 * 200; when the objects in it cannot be judged (wrong kind for the path, missing object), the
 * answer denies with code 400 and says why, and the API server relays that message.
 *
 * Logs carry the request's uid, kind, namespace/name, operation, user and the reasons of a
 * denial, never an object (reasons name variables, never their values).
 */
import { createHash, X509Certificate } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import type { Logger } from "pino";
import { apiGroup, kinds } from "@captf/contract/api";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { TerraformMachinePool } from "../api/terraformmachinepool.js";
import type { TerraformModulePolicy } from "../api/terraformmodulepolicy.js";
import type { TerraformNotificationReceiver } from "../api/terraformnotificationreceiver.js";
import type { TerraformClusterTemplate, TerraformMachinePoolTemplate, TerraformMachineTemplate } from "../api/templates.js";
import { approverPatch } from "./approver.js";
import { approverWebhook, validatingWebhooks, type ValidatingWebhookDefinition } from "./configuration.js";
import type { AdmissionFacts, AdmissionUserInfo } from "./facts.js";
import { validateTerraformCluster } from "./terraformcluster.js";
import {
  identityNeedsAccessReview,
  validateTerraformClusterIdentity,
  validateTerraformClusterIdentityDeletion,
  type SecretAccess,
} from "./terraformclusteridentity.js";
import { validateTerraformMachine, validateTerraformMachineDeletion } from "./terraformmachine.js";
import { validateTerraformMachinePool } from "./terraformmachinepool.js";
import { validateTerraformModulePolicy } from "./terraformmodulepolicy.js";
import { validateTerraformNotificationReceiver } from "./terraformnotificationreceiver.js";
import { validateTerraformClusterTemplate, validateTerraformMachinePoolTemplate, validateTerraformMachineTemplate } from "./templates.js";
import { verdict, type AdmissionContext, type Verdict } from "./verdict.js";

export const admissionReviewApiVersion = "admission.k8s.io/v1";
/** controller-runtime's limit: an old and a new object of etcd's 1.5 MiB each, and then some. */
export const defaultMaxBodyBytes = 7 * 1024 * 1024;
/** How often the certificate files are re-read besides the directory watch (which misses some volume updates). */
export const defaultCertificatePollMillis = 10_000;

// ---- AdmissionReview ----

export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  subResource?: string;
  name?: string;
  namespace?: string;
  userInfo: AdmissionUserInfo;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  /** base64 of a JSON Patch, from the mutating webhook only. */
  patch?: string;
  patchType?: "JSONPatch";
  status?: { code: number; reason?: string; message: string };
  warnings?: string[];
}

export interface AdmissionReviewAnswer {
  apiVersion: typeof admissionReviewApiVersion;
  kind: "AdmissionReview";
  response: AdmissionResponse;
}

/** The request of an AdmissionReview body, or what is wrong with the body. */
export function decodeAdmissionReview(body: unknown): { request: AdmissionRequest } | { problem: string } {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return { problem: "the body must be a JSON object: an admission.k8s.io/v1 AdmissionReview" };
  const review = body as Record<string, unknown>;
  if (review.apiVersion !== admissionReviewApiVersion || review.kind !== "AdmissionReview") {
    return {
      problem:
        `expected apiVersion ${admissionReviewApiVersion} kind AdmissionReview, got apiVersion ` +
        `${JSON.stringify(review.apiVersion)} kind ${JSON.stringify(review.kind)}; the webhook configuration must list ` +
        `admissionReviewVersions: ["v1"]`,
    };
  }
  const request = review.request as Record<string, unknown> | undefined;
  if (request === null || typeof request !== "object" || Array.isArray(request))
    return { problem: "request is missing: an AdmissionReview sent for review carries a request" };
  if (typeof request.uid !== "string" || request.uid === "") return { problem: "request.uid must be a non-empty string" };
  const kind = request.kind as Record<string, unknown> | undefined;
  if (!kind || typeof kind.kind !== "string" || typeof kind.group !== "string")
    return { problem: "request.kind must name the group, version and kind of the object" };
  if (!["CREATE", "UPDATE", "DELETE", "CONNECT"].includes(request.operation as string)) {
    return { problem: `request.operation ${JSON.stringify(request.operation)} must be CREATE, UPDATE, DELETE or CONNECT` };
  }
  const userInfo = request.userInfo;
  if (userInfo !== undefined && (userInfo === null || typeof userInfo !== "object" || Array.isArray(userInfo)))
    return { problem: "request.userInfo must be an object" };
  return {
    request: {
      ...(request as unknown as AdmissionRequest),
      userInfo: (userInfo ?? {}) as AdmissionUserInfo,
      // Kubernetes sends null for the absent object of a DELETE and the absent oldObject of a CREATE.
      object: request.object ?? undefined,
      oldObject: request.oldObject ?? undefined,
    },
  };
}

// ---- Judging a request ----

export interface ReviewDependencies {
  facts: AdmissionFacts;
  /** system:serviceaccount:<namespace>:<name> of the manager: the only writer of a providerID. */
  managerUsername: string;
  logger: Logger;
}

/** What a decoded request could not be judged for; answered as a denial with code 400. */
class UnjudgeableRequest extends Error {}

type Spec = Record<string, unknown>;

function objectWithSpec<T>(field: "object" | "oldObject", value: unknown, template: boolean): T {
  if (value === undefined) throw new UnjudgeableRequest(`request.${field} is missing`);
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new UnjudgeableRequest(`request.${field} must be an object`);
  const spec = (value as { spec?: unknown }).spec;
  if (spec === null || typeof spec !== "object" || Array.isArray(spec))
    throw new UnjudgeableRequest(`request.${field}.spec must be an object`);
  if (template) {
    const inner = (spec as Spec).template as Spec | undefined;
    if (
      inner === null ||
      typeof inner !== "object" ||
      Array.isArray(inner) ||
      inner.spec === null ||
      typeof inner.spec !== "object" ||
      Array.isArray(inner.spec)
    ) {
      throw new UnjudgeableRequest(`request.${field}.spec.template.spec must be an object`);
    }
  }
  return value as T;
}

type Validator<T> = (oldObject: T | undefined, newObject: T, context: AdmissionContext) => Verdict;

const templateKinds: readonly string[] = [kinds.clusterTemplate, kinds.machineTemplate, kinds.machinePoolTemplate];

/** The validator's verdict on a CREATE or UPDATE of a kind whose validator needs no facts. */
function judgeWrite<T>(request: AdmissionRequest, kind: string, validate: Validator<T>, context: AdmissionContext): Verdict {
  const template = templateKinds.includes(kind);
  const newObject = objectWithSpec<T>("object", request.object, template);
  const oldObject = request.operation === "UPDATE" ? objectWithSpec<T>("oldObject", request.oldObject, template) : undefined;
  return validate(oldObject, newObject, context);
}

async function judgeIdentityWrite(request: AdmissionRequest, context: AdmissionContext, deps: ReviewDependencies): Promise<Verdict> {
  const newObject = objectWithSpec<TerraformClusterIdentity>("object", request.object, false);
  const oldObject =
    request.operation === "UPDATE" ? objectWithSpec<TerraformClusterIdentity>("oldObject", request.oldObject, false) : undefined;
  let secretAccess: SecretAccess | undefined;
  const secretRef = newObject.spec.secretRef;
  // A review that cannot run leaves secretAccess unset, which the validator answers with "retry".
  if (identityNeedsAccessReview(oldObject, newObject) && secretRef?.name && secretRef.namespace) {
    try {
      secretAccess = await deps.facts.secretAccess(request.userInfo, { namespace: secretRef.namespace, name: secretRef.name });
    } catch (error) {
      deps.logger.warn({ uid: request.uid, err: error }, "SubjectAccessReview for a TerraformClusterIdentity failed");
    }
  }
  return validateTerraformClusterIdentity(oldObject, newObject, { ...context, ...(secretAccess ? { secretAccess } : {}) });
}

async function judgeDeletion(request: AdmissionRequest, kind: string, deps: ReviewDependencies): Promise<Verdict> {
  if (kind === kinds.machine) {
    const object = objectWithSpec<TerraformMachine>("oldObject", request.oldObject, false);
    try {
      return validateTerraformMachineDeletion(object, await deps.facts.machineDeletion(object));
    } catch (error) {
      // The reference's delete check fails open: a deletion is never stuck on a lookup.
      deps.logger.warn(
        { uid: request.uid, err: error },
        "could not look up the Machines of a TerraformMachine being deleted; admitting the deletion",
      );
      return verdict(
        [],
        [
          `could not check whether a Machine still uses this TerraformMachine ` +
            `(${error instanceof Error ? error.message : String(error)}); deletion admitted`,
        ],
      );
    }
  }
  if (kind === kinds.clusterIdentity) {
    const object = objectWithSpec<TerraformClusterIdentity>("oldObject", request.oldObject, false);
    const name = object.metadata?.name ?? request.name ?? "";
    try {
      return validateTerraformClusterIdentityDeletion(object, await deps.facts.identityUsers(name));
    } catch (error) {
      deps.logger.warn({ uid: request.uid, err: error }, "could not look up the users of a TerraformClusterIdentity being deleted");
      return verdict([
        `could not check whether TerraformClusterIdentity ${name} is still in use ` +
          `(${error instanceof Error ? error.message : String(error)}); retry the deletion`,
      ]);
    }
  }
  return verdict([]);
}

/** Judges one decoded request at one kind's webhook. */
export async function reviewAdmissionRequest(
  webhook: ValidatingWebhookDefinition,
  request: AdmissionRequest,
  deps: ReviewDependencies,
): Promise<AdmissionResponse> {
  const { uid } = request;
  try {
    if (request.kind.group !== apiGroup || request.kind.kind !== webhook.kind) {
      throw new UnjudgeableRequest(
        `this webhook validates ${webhook.kind}.${apiGroup}, the request is for ` +
          `${request.kind.kind}.${request.kind.group || "core"}; fix the rules of webhook ${webhook.name}`,
      );
    }
    // The status subresource is not covered; a configuration that sends it anyway changes nothing.
    if (request.subResource) return { uid, allowed: true };
    if (request.operation === "CONNECT")
      throw new UnjudgeableRequest(`operation CONNECT is not validated; remove it from the rules of webhook ${webhook.name}`);
    const context: AdmissionContext = {
      requester: { username: request.userInfo.username ?? "", ...(request.userInfo.groups ? { groups: request.userInfo.groups } : {}) },
      managerUsername: deps.managerUsername,
      ...(request.dryRun === undefined ? {} : { dryRun: request.dryRun }),
    };
    let result: Verdict;
    if (request.operation === "DELETE") result = await judgeDeletion(request, webhook.kind, deps);
    else if (webhook.kind === kinds.clusterIdentity) result = await judgeIdentityWrite(request, context, deps);
    else result = judgeWrite(request, webhook.kind, writeValidators[webhook.kind] as Validator<unknown>, context);
    return toResponse(uid, request.operation, result);
  } catch (error) {
    if (error instanceof UnjudgeableRequest)
      return { uid, allowed: false, status: { code: 400, reason: "BadRequest", message: error.message } };
    deps.logger.error({ uid, kind: webhook.kind, err: error }, "validator failed");
    return {
      uid,
      allowed: false,
      status: {
        code: 500,
        reason: "InternalError",
        message:
          `the ${webhook.kind} validator failed: ${error instanceof Error ? error.message : String(error)}; see the ` +
          `captf manager's log`,
      },
    };
  }
}

/** The approver webhook's answer: always admitted, with the patch that records the requester as approver when the write approves a plan. */
export function reviewApproverRequest(request: AdmissionRequest): AdmissionResponse {
  const { uid } = request;
  if (
    request.kind.group !== apiGroup ||
    request.kind.kind !== approverWebhook.kind ||
    request.subResource ||
    (request.operation !== "CREATE" && request.operation !== "UPDATE")
  )
    return { uid, allowed: true };
  const patch = approverPatch(request.oldObject as never, request.object as never, request.userInfo.username ?? "");
  if (patch.length === 0) return { uid, allowed: true };
  return { uid, allowed: true, patchType: "JSONPatch", patch: Buffer.from(JSON.stringify(patch)).toString("base64") };
}

const writeValidators: Record<Exclude<(typeof kinds)[keyof typeof kinds], "TerraformClusterIdentity">, Validator<never>> = {
  [kinds.cluster]: validateTerraformCluster as Validator<TerraformCluster>,
  [kinds.clusterTemplate]: validateTerraformClusterTemplate as Validator<TerraformClusterTemplate>,
  [kinds.machine]: validateTerraformMachine as Validator<TerraformMachine>,
  [kinds.machineTemplate]: validateTerraformMachineTemplate as Validator<TerraformMachineTemplate>,
  [kinds.machinePool]: validateTerraformMachinePool as Validator<TerraformMachinePool>,
  [kinds.machinePoolTemplate]: validateTerraformMachinePoolTemplate as Validator<TerraformMachinePoolTemplate>,
  [kinds.modulePolicy]: validateTerraformModulePolicy as Validator<TerraformModulePolicy>,
  [kinds.notificationReceiver]: validateTerraformNotificationReceiver as Validator<TerraformNotificationReceiver>,
};

/** A refused write is Invalid (422) like a failed schema check; a refused deletion is Forbidden (403). */
function toResponse(uid: string, operation: AdmissionRequest["operation"], result: Verdict): AdmissionResponse {
  const warnings = result.warnings && result.warnings.length > 0 ? { warnings: result.warnings } : {};
  if (result.allowed) return { uid, allowed: true, ...warnings };
  const status = operation === "DELETE" ? { code: 403, reason: "Forbidden" } : { code: 422, reason: "Invalid" };
  return { uid, allowed: false, status: { ...status, message: result.reasons.join("; ") }, ...warnings };
}

// ---- The HTTPS server ----

export interface AdmissionServerOptions extends ReviewDependencies {
  /** 0 picks a free port. */
  port: number;
  /** Interface to listen on; all when unset. */
  host?: string;
  /**
   * Serving certificate (PEM, the chain) and key, as cert-manager writes them (--webhook-cert-dir + --webhook-cert-name /
   * --webhook-key-name).
   */
  certFile: string;
  keyFile: string;
  /** TLS settings of the --tls-* flags, in Node's terms. */
  tls?: Pick<SecureContextOptions, "minVersion" | "ciphers" | "ecdhCurve">;
  maxBodyBytes?: number;
  certificatePollMillis?: number;
}

export interface AdmissionServer {
  readonly port: number;
  /** Re-reads the certificate files; true when a new pair was loaded. Runs on its own when the files change. */
  reloadCertificate(): Promise<boolean>;
  /** Stops accepting connections, lets requests in flight finish for up to `graceMillis`, then cuts the rest. */
  close(graceMillis?: number): Promise<void>;
}

export class WebhookCertificateError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WebhookCertificateError";
  }
}

interface LoadedPair {
  cert: Buffer;
  key: Buffer;
  digest: string;
}

async function readPair(certFile: string, keyFile: string, tls: AdmissionServerOptions["tls"]): Promise<LoadedPair> {
  let cert: Buffer;
  let key: Buffer;
  try {
    [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
  } catch (error) {
    throw new WebhookCertificateError(
      `webhook serving certificate: ${error instanceof Error ? error.message : String(error)}; mount the serving certificate ` +
        `Secret at --webhook-cert-dir (files named by --webhook-cert-name and --webhook-key-name)`,
      { cause: error },
    );
  }
  try {
    createSecureContext({ cert, key, ...tls });
  } catch (error) {
    throw new WebhookCertificateError(
      `webhook serving certificate ${certFile} and key ${keyFile} do not form a usable pair: ` +
        `${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const digest = createHash("sha256").update(cert).update("\0").update(key).digest("hex");
  return { cert, key, digest };
}

function describeCertificate(cert: Buffer): { subject?: string; notAfter?: string; fingerprint256?: string } {
  try {
    const x509 = new X509Certificate(cert);
    return { subject: x509.subject, notAfter: x509.validTo, fingerprint256: x509.fingerprint256 };
  } catch {
    return {};
  }
}

class BodyTooLarge extends Error {}

function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers["content-length"]);
    if (Number.isFinite(declared) && declared > maxBytes) {
      request.resume();
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        if (chunks.length > 0) chunks.length = 0;
        request.removeAllListeners("data");
        request.resume();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

function answer(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (response.headersSent) return;
  const text = JSON.stringify(body);
  response.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), ...headers });
  response.end(text);
}

function reviewAnswer(response: AdmissionResponse): AdmissionReviewAnswer {
  return { apiVersion: admissionReviewApiVersion, kind: "AdmissionReview", response };
}

/** An answer to a body that is no readable review: an AdmissionReview when possible, so a human reading it sees the reason. */
function badRequest(response: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  answer(response, status, reviewAnswer({ uid: "", allowed: false, status: { code: status, message } }), headers);
}

/** A review's request, read and checked: a webhook's path, POST, JSON within the size limit, an AdmissionReview v1. */
interface ReadReview {
  path: string;
  webhook: ValidatingWebhookDefinition;
  admission: AdmissionRequest;
}

/** Reads a review from `request`; undefined once the problem is answered (404, 405, 415, 413, 400) or the request aborted. */
async function readReview(
  request: IncomingMessage,
  response: ServerResponse,
  webhooksByPath: ReadonlyMap<string, ValidatingWebhookDefinition>,
  maxBodyBytes: number,
  log: Logger,
): Promise<ReadReview | undefined> {
  const path = new URL(request.url ?? "/", "https://webhook").pathname;
  const webhook = webhooksByPath.get(path);
  if (!webhook) {
    request.resume();
    badRequest(response, 404, `no webhook at ${path}; the paths are ${[...webhooksByPath.keys()].join(", ")}`);
    return undefined;
  }
  if (request.method !== "POST") {
    request.resume();
    badRequest(response, 405, `${request.method ?? ""} is not allowed: POST an AdmissionReview`, { Allow: "POST" });
    return undefined;
  }
  const contentType = request.headers["content-type"] ?? "";
  if (!/^application\/json\b/i.test(contentType)) {
    request.resume();
    badRequest(response, 415, `Content-Type ${JSON.stringify(contentType)} is not supported: send application/json`);
    return undefined;
  }
  let body: Buffer;
  try {
    body = await readBody(request, maxBodyBytes);
  } catch (error) {
    if (error instanceof BodyTooLarge) {
      log.warn({ path, maxBodyBytes }, "AdmissionReview body over the limit");
      badRequest(response, 413, `the body exceeds ${maxBodyBytes} bytes, the limit of an AdmissionReview`, { Connection: "close" });
    }
    return undefined; // An aborted request has no one to answer.
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch (error) {
    badRequest(
      response,
      400,
      `the body is not JSON (${error instanceof Error ? error.message : String(error)}): POST an admission.k8s.io/v1 AdmissionReview`,
    );
    return undefined;
  }
  const decoded = decodeAdmissionReview(parsed);
  if ("problem" in decoded) {
    log.warn({ path, problem: decoded.problem }, "malformed AdmissionReview");
    badRequest(response, 400, `malformed AdmissionReview: ${decoded.problem}`);
    return undefined;
  }
  return { path, webhook, admission: decoded.request };
}

/** The log line of an answered review: who asked what, and the verdict; debug when admitted, info when denied. */
function logReview(log: Logger, { webhook, admission }: ReadReview, result: AdmissionResponse, started: number): void {
  const fields = {
    uid: admission.uid,
    kind: webhook.kind,
    namespace: admission.namespace,
    name: admission.name,
    operation: admission.operation,
    user: admission.userInfo.username,
    dryRun: admission.dryRun,
    allowed: result.allowed,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
    ...(result.status ? { code: result.status.code, reasons: result.status.message } : {}),
    ...(result.warnings ? { warnings: result.warnings } : {}),
    ...(result.patch ? { patched: true } : {}),
  };
  if (result.allowed) log.debug(fields, "admitted");
  else log.info(fields, "denied");
}

/**
 * Calls `changed` (debounced) when a file in the certificate's or key's directory changes; returns the stop.
 * Kubernetes updates a Secret volume by swapping a symlinked directory, so watch the directories, not the files.
 */
function watchCertificateDirectories(options: AdmissionServerOptions, log: Logger, changed: () => void): () => void {
  const watchers: FSWatcher[] = [];
  let debounce: NodeJS.Timeout | undefined;
  for (const directory of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
    try {
      const watcher = watch(directory, () => {
        clearTimeout(debounce);
        debounce = setTimeout(changed, 100);
      });
      watcher.on("error", (error) => log.warn({ err: error, directory }, "certificate directory watch failed; relying on polling"));
      watchers.push(watcher);
    } catch (error) {
      log.warn({ err: error, directory }, "cannot watch the certificate directory; relying on polling");
    }
  }
  return () => {
    clearTimeout(debounce);
    for (const watcher of watchers) watcher.close();
  };
}

export async function startAdmissionServer(options: AdmissionServerOptions): Promise<AdmissionServer> {
  const log = options.logger.child({ component: "webhook-server" });
  const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes;
  const webhooksByPath = new Map<string, ValidatingWebhookDefinition>(
    [...validatingWebhooks, approverWebhook].map((webhook) => [webhook.path, webhook]),
  );
  let pair = await readPair(options.certFile, options.keyFile, options.tls);

  let stopping = false;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = performance.now();
    // Once closing, each answer ends its connection, so close() need not wait out keep-alive clients.
    response.on("finish", () => stopping && server.closeIdleConnections());
    if (stopping) response.shouldKeepAlive = false;
    const review = await readReview(request, response, webhooksByPath, maxBodyBytes, log);
    if (!review) return;
    const result =
      review.path === approverWebhook.path
        ? reviewApproverRequest(review.admission)
        : await reviewAdmissionRequest(review.webhook, review.admission, { ...options, logger: log });
    answer(response, 200, reviewAnswer(result));
    logReview(log, review, result, started);
  }

  const server: Server = createServer(
    { cert: pair.cert, key: pair.key, ...options.tls, requestTimeout: 30_000, headersTimeout: 10_000 },
    (request, response) => {
      handle(request, response).catch((error: unknown) => {
        log.error({ err: error }, "admission request failed");
        answer(
          response,
          500,
          reviewAnswer({ uid: "", allowed: false, status: { code: 500, message: "internal error; see the captf manager's log" } }),
        );
      });
    },
  );
  server.on("tlsClientError", (error) => log.debug({ err: error }, "TLS handshake failed"));

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => log.error({ err: error }, "webhook server error"));
  const port = (server.address() as AddressInfo).port;
  log.info({ port, certFile: options.certFile, ...describeCertificate(pair.cert) }, "webhook server listening");

  let reloading: Promise<boolean> | undefined;
  async function reload(): Promise<boolean> {
    const next = await readPair(options.certFile, options.keyFile, options.tls);
    if (next.digest === pair.digest) return false;
    server.setSecureContext({ cert: next.cert, key: next.key, ...options.tls });
    pair = next;
    log.info({ certFile: options.certFile, ...describeCertificate(next.cert) }, "serving certificate reloaded");
    return true;
  }
  /** One reload at a time; a half-written rotation is logged and retried on the next change or poll. */
  function reloadCertificate(): Promise<boolean> {
    reloading ??= reload().finally(() => (reloading = undefined));
    return reloading;
  }
  function reloadQuietly(): void {
    reloadCertificate().catch((error: unknown) => log.warn({ err: error }, "serving certificate not reloaded; keeping the previous one"));
  }

  const stopWatching = watchCertificateDirectories(options, log, reloadQuietly);
  const poll = setInterval(reloadQuietly, options.certificatePollMillis ?? defaultCertificatePollMillis);
  poll.unref();

  let closing: Promise<void> | undefined;
  async function close(graceMillis = 5000): Promise<void> {
    stopping = true;
    clearInterval(poll);
    stopWatching();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const cut = setTimeout(() => server.closeAllConnections(), graceMillis);
    await closed;
    clearTimeout(cut);
    log.info({ port }, "webhook server stopped");
  }

  return {
    port,
    reloadCertificate,
    close: (graceMillis) => (closing ??= close(graceMillis)),
  };
}
