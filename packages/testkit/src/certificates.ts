// Serving certificates made with openssl: a throwaway CA and a leaf for loopback webhook servers
// (the API server checks the SANs; it ignores the CN). Used where cert-manager would issue one.
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ServingCertificate {
  caFile: string;
  certFile: string;
  keyFile: string;
  caPem: string;
  fingerprint256: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** Writes ca.crt, tls.crt and tls.key into `dir` (created if missing), for `ip` and any `dnsNames`. */
export function generateServingCertificate(dir: string, ip = "127.0.0.1", dnsNames: readonly string[] = []): ServingCertificate {
  mkdirSync(dir, { recursive: true });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(
    [
      "req",
      "-x509",
      ...ec,
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "2",
      "-subj",
      "/CN=captf-webhook-test-ca",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ],
    dir,
  );
  openssl(["req", ...ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", `/CN=${ip}`], dir);
  const sans = [`IP:${ip}`, ...dnsNames.map((name) => `DNS:${name}`)].join(",");
  writeFileSync(
    join(dir, "leaf.ext"),
    `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n`,
  );
  openssl(
    [
      "x509",
      "-req",
      "-in",
      "tls.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "tls.crt",
      "-days",
      "2",
      "-extfile",
      "leaf.ext",
    ],
    dir,
  );
  const certFile = join(dir, "tls.crt");
  return {
    caFile: join(dir, "ca.crt"),
    certFile,
    keyFile: join(dir, "tls.key"),
    caPem: readFileSync(join(dir, "ca.crt"), "utf8"),
    fingerprint256: new X509Certificate(readFileSync(certFile)).fingerprint256,
  };
}
