// `captf-module push`: flags to a push, and its report.
import { resolve } from "node:path";
import { report, type CliIo, type OutputFormat } from "../io.js";
import { findRegistryCredentials } from "./credentials.js";
import { parseDestination, parseLayoutSource } from "./reference.js";
import { pushLayout, type PushOptions, type PushReport } from "./registry-push.js";

export interface PushFlags {
  source: string;
  destination: string;
  plainHttp: boolean;
  format: OutputFormat;
}

export function pushText(result: PushReport): string {
  const lines = [`captf-module: pushed ${result.source} to ${result.destination} = ${result.digest}`];
  for (const platform of result.platforms) lines.push(`  ${platform.platform || "image"}: ${platform.digest}`);
  const { pushed, present, bytes } = result.blobs;
  lines.push(`  blobs: ${pushed} pushed (${bytes} bytes), ${present} already there; credentials: ${result.credentials}`);
  const name = result.destination.slice(0, result.destination.lastIndexOf(":"));
  lines.push(`use it as spec.source.image: ${name}@${result.digest}`);
  return `${lines.join("\n")}\n`;
}

/** Pushes `layout:tag` with the credentials the environment or the Docker config file has for the destination. */
export function pushBuiltImage(
  io: CliIo,
  layout: string,
  tag: string,
  destination: PushOptions["destination"],
  plainHttp: boolean,
): Promise<PushReport> {
  const { credentials, origin } = findRegistryCredentials(destination.registry, io.env ?? process.env);
  return pushLayout({ layout, tag, destination, credentials, credentialsOrigin: origin, plainHttp });
}

export async function runPush(io: CliIo, flags: PushFlags): Promise<number> {
  const source = parseLayoutSource(flags.source);
  const destination = parseDestination(flags.destination);
  const result = await pushBuiltImage(io, resolve(io.cwd ?? process.cwd(), source.layout), source.tag, destination, flags.plainHttp);
  report(io, flags.format, result, pushText(result));
  return 0;
}
