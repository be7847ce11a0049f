import { createHash } from "node:crypto";
import { Agent as HttpsAgent, type AgentOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

/**
 * @kubernetes/client-node 1.4 builds a new https.Agent for every request, so each API call of the
 * reconcile pass paid a full TLS handshake (about half the manager's CPU at 1,000 machines). This
 * gives a KubeConfig's API clients one keep-alive agent per TLS identity instead.
 */

/** Connections kept open per API server. */
const maxSockets = 32;
/** A rotated client certificate makes a new agent; older ones are dropped past this many. */
const maxAgents = 4;

interface ClusterLike {
  server?: string;
  proxyUrl?: string;
}

type CreateAgent = (cluster: ClusterLike | null, options: AgentOptions) => unknown;

function identityOf(cluster: ClusterLike, options: AgentOptions): string {
  const parts = [cluster.server, options.ca, options.cert, options.key, options.pfx, options.passphrase, options.rejectUnauthorized, options.servername];
  return createHash("sha256").update(JSON.stringify(parts.map((part) => (Buffer.isBuffer(part) ? part.toString("base64") : part)))).digest("hex");
}

const wrapped = new WeakSet<KubeConfig>();

export function withKeepAlive(kubeConfig: KubeConfig): KubeConfig {
  if (wrapped.has(kubeConfig)) return kubeConfig;
  wrapped.add(kubeConfig);
  const target = kubeConfig as unknown as { createAgent: CreateAgent };
  const original = target.createAgent.bind(kubeConfig);
  const agents = new Map<string, HttpsAgent>();
  target.createAgent = (cluster, options) => {
    // Proxies and plain HTTP keep client-node's own agents.
    if (!cluster?.server?.startsWith("https:") || cluster.proxyUrl) return original(cluster, options);
    const key = identityOf(cluster, options);
    let agent = agents.get(key);
    if (!agent) {
      if (agents.size >= maxAgents) {
        const [oldest] = agents.keys();
        agents.get(oldest!)?.destroy();
        agents.delete(oldest!);
      }
      agent = new HttpsAgent({ ...options, keepAlive: true, maxSockets });
      agents.set(key, agent);
    }
    return agent;
  };
  return kubeConfig;
}
