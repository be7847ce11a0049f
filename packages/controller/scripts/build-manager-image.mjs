#!/usr/bin/env node
// Builds the captf-controller image into an OCI layout with umoci (no Docker): three layers,
//   1. this machine's node at /usr/local/bin/node with the libraries `ldd node` names, at their paths;
//      /etc/passwd and /etc/group naming the user 65532; /tmp
//   2. the runner bundle (packages/runner/scripts/build-bundle.mjs) at /opt/captf/runner: every Job's
//      init container runs `node /opt/captf/runner/runner.mjs copy /captf/bin` from this image
//   3. the manager bundle (scripts/build-manager-bundle.mjs) at /opt/captf/manager/manager.mjs
// and the config: user 65532:65532, entrypoint `node /opt/captf/manager/manager.mjs`, the
// org.opencontainers.image.* labels. The runner bundle carries its own node, patched to load its
// libraries from /captf/bin/lib where Jobs copy it; that one cannot run here, so layer 1 has a plain one.
// Usage: node scripts/build-manager-image.mjs --out <oci-layout> --tag <tag> [--commit <id>] [--source <url>]
// Then, e.g.: skopeo copy oci:<oci-layout>:<tag> docker://<registry>/captf-controller:<tag>
import { execFileSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gitCommit } from "./build-info.mjs";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    out: { type: "string" },
    tag: { type: "string" },
    commit: { type: "string" },
    source: { type: "string", default: "https://github.com/captf-io/captf" },
  },
});
if (!values.out || !values.tag) {
  console.error("usage: build-manager-image.mjs --out <oci-layout-dir> --tag <tag> [--commit <id>] [--source <url>]");
  process.exit(2);
}
const layout = resolve(values.out);
const ref = `${layout}:${values.tag}`;
const version = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).version;
const architectures = { x64: "amd64", arm64: "arm64" };
const architecture = architectures[process.arch];
if (!architecture) {
  console.error(`build-manager-image: no OCI architecture for ${process.arch}`);
  process.exit(1);
}
const commit = values.commit ?? gitCommit();

function run(command, args) {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    if (error.code === "ENOENT") console.error(`build-manager-image: ${command} is required (Debian: apt-get install -y ${command})`);
    else console.error(`build-manager-image: ${command} ${args.join(" ")} failed:\n${error.stderr ?? error.message}`);
    process.exit(1);
  }
}
const rootless = process.getuid?.() !== 0 ? ["--rootless"] : [];
const umoci = (...args) => run("umoci", args);

/** node and its libraries where `ldd` finds them on this machine, so the image's loader finds them at the same paths. */
function layOutNodeRoot(root) {
  const node = realpathSync(process.execPath);
  const place = (from, to) => {
    mkdirSync(dirname(to), { recursive: true });
    cpSync(from, to);
  };
  place(node, join(root, "usr/local/bin/node"));
  chmodSync(join(root, "usr/local/bin/node"), 0o755);
  for (const line of run("ldd", [node]).split("\n")) {
    const path = /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1];
    if (path) place(realpathSync(path), join(root, path));
  }
  mkdirSync(join(root, "etc"), { recursive: true });
  writeFileSync(join(root, "etc/passwd"), "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n");
  writeFileSync(join(root, "etc/group"), "root:x:0:\nnonroot:x:65532:\n");
  mkdirSync(join(root, "home/nonroot"), { recursive: true });
  chmodSync(join(root, "home/nonroot"), 0o755);
  mkdirSync(join(root, "tmp"), { recursive: true });
  chmodSync(join(root, "tmp"), 0o1777);
}

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), "captf-manager-image-"));
try {
  const runnerBundle = join(work, "runner");
  const managerBundle = join(work, "manager");
  const nodeRoot = join(work, "node-root");
  process.stdout.write(run(process.execPath, [join(packageDir, "../runner/scripts/build-bundle.mjs"), "--out", runnerBundle]));
  process.stdout.write(run(process.execPath, [join(packageDir, "scripts/build-manager-bundle.mjs"), "--out", managerBundle, "--commit", commit]));
  layOutNodeRoot(nodeRoot);

  if (!existsSync(join(layout, "index.json"))) umoci("init", "--layout", layout);
  umoci("new", "--image", ref);
  const insert = (source, target, createdBy) => umoci("insert", ...rootless, "--image", ref, "--history.created_by", createdBy, source, target);
  insert(nodeRoot, "/", `node ${process.version} and its libraries`);
  insert(runnerBundle, "/opt/captf/runner", "runner bundle (packages/runner/scripts/build-bundle.mjs)");
  insert(managerBundle, "/opt/captf/manager", "manager bundle (packages/controller/scripts/build-manager-bundle.mjs)");
  const labels = {
    "org.opencontainers.image.title": "captf-controller",
    "org.opencontainers.image.description": "The captf manager and the runner bundle every captf Job copies",
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.revision": commit,
    "org.opencontainers.image.source": values.source,
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.created": new Date().toISOString(),
  };
  umoci(
    "config",
    ...rootless,
    "--image",
    ref,
    "--config.user",
    "65532:65532",
    "--config.env",
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "--config.entrypoint",
    "node",
    "--config.entrypoint",
    "/opt/captf/manager/manager.mjs",
    "--config.workingdir",
    "/",
    "--architecture",
    architecture,
    "--os",
    "linux",
    ...Object.entries(labels).flatMap(([key, value]) => ["--config.label", `${key}=${value}`]),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}

const manifest = JSON.parse(run("skopeo", ["inspect", "--raw", `oci:${ref}`]));
const compressedBytes = manifest.layers.reduce((sum, layer) => sum + layer.size, 0);
console.log(
  `build-manager-image: ${ref} (${architecture}, version ${version}, commit ${commit}) in ${((Date.now() - started) / 1000).toFixed(1)}s: ` +
    `${manifest.layers.length} layers, ${(compressedBytes / 1048576).toFixed(1)} MiB compressed`,
);
