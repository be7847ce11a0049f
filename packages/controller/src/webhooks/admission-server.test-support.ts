// The admission server as the integration suites run it: on loopback, with a serving certificate
// made in `dir`, facts from the live API, logging silenced unless CAPTF_TEST_LOG_LEVEL says otherwise.
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { freeLoopbackPort } from "@captf/testkit";
import { managerUsername } from "./admission.test-support.js";
import { generateServingCertificate } from "./certificates.test-support.js";
import { KubeClient } from "../runtime/kube-client.js";
import { kubernetesAdmissionFacts } from "./facts.js";
import { startAdmissionServer, type AdmissionServer } from "./server.js";

export async function startLoopbackAdmissionServer(
  kubeConfig: k8s.KubeConfig,
  dir: string,
): Promise<{ server: AdmissionServer; url: string; caPem: string }> {
  const certificate = generateServingCertificate(dir, "127.0.0.1");
  const server = await startAdmissionServer({
    port: await freeLoopbackPort(),
    host: "127.0.0.1",
    certFile: certificate.certFile,
    keyFile: certificate.keyFile,
    logger: pino({ level: process.env.CAPTF_TEST_LOG_LEVEL ?? "silent" }),
    managerUsername,
    facts: kubernetesAdmissionFacts(new KubeClient(kubeConfig)),
  });
  return { server, url: `https://127.0.0.1:${server.port}`, caPem: certificate.caPem };
}
