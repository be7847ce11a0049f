// `captf-module push`: flags to a push, and its report.
import { resolve } from "node:path";
import { report, type CliIo, type OutputFormat } from "../io.js";
import { findRegistryCredentials } from "./credentials.js";
import { parseDestination, parseLayoutSource } from "./reference.js";
import { pushLayout, type PushReport } from "./registry-push.js";

export interface PushFlags {
  source: string;
  destination: string;
  plainHttp: boolean;
  format: OutputFormat;
}

function text(result: PushReport): string {
  const lines = [`captf-module: pushed ${result.source} to ${result.destination} = ${result.digest}`];
  for (const platform of result.platforms) lines.push(`  ${platform.platform || "image"}: ${platform.digest}`);
  const { pushed, present, bytes } = result.blobs;
  lines.push(`  blobs: ${pushed} pushed (${bytes} bytes), ${present} already there; credentials: ${result.credentials}`);
  const name = result.destination.slice(0, result.destination.lastIndexOf(":"));
  lines.push(`use it as spec.source.image: ${name}@${result.digest}`);
  return `${lines.join("\n")}\n`;
}

export async function runPush(io: CliIo, flags: PushFlags): Promise<number> {
  const source = parseLayoutSource(flags.source);
  const destination = parseDestination(flags.destination);
  const { credentials, origin } = findRegistryCredentials(destination.registry, io.env ?? process.env);
  const result = await pushLayout({
    layout: resolve(io.cwd ?? process.cwd(), source.layout),
    tag: source.tag,
    destination,
    credentials,
    credentialsOrigin: origin,
    plainHttp: flags.plainHttp,
  });
  report(io, flags.format, result, text(result));
  return 0;
}
