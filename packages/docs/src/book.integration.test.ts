import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { describeWithTools, requireTool } from "@captf/testkit";

// Builds the book with VitePress as `pnpm --filter @captf/docs book` does (a dead link fails the
// build), checks every anchor a page links to, and opens the built quick start in headless Chromium.

const packageRoot = fileURLToPath(new URL("../", import.meta.url));
const docsDir = join(packageRoot, "../../docs");
const vitepress = join(packageRoot, "node_modules/vitepress/bin/vitepress.js");

/** Every Markdown page of docs/, relative to it. */
function markdownPages(dir = docsDir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownPages(path);
    return entry.name.endsWith(".md") ? [relative(docsDir, path)] : [];
  });
}

/** The built page of a Markdown page, relative to the output folder. */
const htmlOf = (page: string) => page.replace(/\.md$/, ".html");

/** Links of a built page to other pages of the book, as [target file, anchor], assets and external links left out. */
function internalLinks(page: string, html: string): [string, string | undefined][] {
  const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((match) => match[1]!.replace(/&amp;/g, "&"));
  return hrefs
    .filter((href) => !/^[a-z]+:/i.test(href) && !href.startsWith("/assets/") && !href.endsWith(".css") && href !== "#VPContent")
    .map((href) => {
      const [path, anchor] = href.split("#", 2) as [string, string | undefined];
      const resolved = path === "" ? page : path.startsWith("/") ? path.slice(1) : posix.join(posix.dirname(page), path);
      const file = resolved === "" || resolved.endsWith("/") ? `${resolved}index.html` : resolved;
      return [file, anchor === undefined ? undefined : decodeURIComponent(anchor)];
    });
}

/** A static file server of the built book that records what was asked and answered. */
function serve(root: string): Promise<{ server: Server; url: string; requests: { path: string; status: number }[] }> {
  const requests: { path: string; status: number }[] = [];
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? "/", "http://book").pathname);
    const file = join(root, path.endsWith("/") ? `${path}index.html` : path);
    const type = file.endsWith(".html")
      ? "text/html"
      : file.endsWith(".js")
        ? "text/javascript"
        : file.endsWith(".css")
          ? "text/css"
          : "application/octet-stream";
    const body = relative(root, file).startsWith("..") ? Promise.reject(new Error("outside the book")) : readFile(file);
    body.then(
      (content) => {
        response.writeHead(200, { "content-type": type }).end(content);
        requests.push({ path, status: 200 });
      },
      () => {
        response.writeHead(404).end();
        requests.push({ path, status: 404 });
      },
    );
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests })),
  );
}

/** Chromium's DOM of a page after it loaded, and the console messages it logged. */
function dumpDom(chromium: string, url: string, profile: string): Promise<{ status: number | null; dom: string; console: string[] }> {
  const args = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    `--user-data-dir=${profile}`,
    "--enable-logging=stderr",
    "--log-level=0",
    "--dump-dom",
    url,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(chromium, args, { stdio: ["ignore", "pipe", "pipe"] });
    let dom = "";
    let log = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (dom += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (log += chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, dom, console: log.split("\n").filter((line) => line.includes(":CONSOLE")) }));
  });
}

describe("the book", () => {
  const work = mkdtempSync(join(tmpdir(), "captf-book-"));
  const out = join(work, "book");
  let build: { status: number | null; output: string };

  beforeAll(() => {
    const run = spawnSync(process.execPath, [vitepress, "build", packageRoot], {
      env: { ...process.env, CAPTF_BOOK_OUT: out, CAPTF_BOOK_CACHE: join(work, "cache") },
      encoding: "utf8",
    });
    build = { status: run.status, output: `${run.stdout}${run.stderr}` };
  }, 600_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("builds: no dead link between pages, and no page failed to render", () => {
    expect([build.status, build.output]).toEqual([0, expect.stringContaining("build complete")]);
    expect(build.output.split("\n").filter((line) => /error|dead link/i.test(line))).toEqual([]);
  });

  it("has every page of docs/ with its title, each in the sidebar", () => {
    const missing = markdownPages().filter((page) => {
      const file = join(out, htmlOf(page));
      return !existsSync(file) || !/<h1 id="[^"]+"/.test(readFileSync(file, "utf8"));
    });
    expect(missing).toEqual([]);
    const sidebar = [...readFileSync(join(out, "index.html"), "utf8").matchAll(/class="VPLink link link" href="\/([^"#]*)/g)].map(
      (match) => (match[1]!.endsWith("/") || match[1] === "" ? `${match[1]}index.md` : match[1]!.replace(/\.html$/, ".md")),
    );
    expect(markdownPages().filter((page) => !sidebar.includes(page))).toEqual([]);
  });

  it("links only to anchors that exist", () => {
    const ids = new Map<string, Set<string>>();
    const idsOf = (file: string) => {
      if (!ids.has(file)) {
        const path = join(out, file);
        ids.set(
          file,
          new Set(existsSync(path) ? [...readFileSync(path, "utf8").matchAll(/ id="([^"]+)"/g)].map((match) => match[1]!) : []),
        );
      }
      return ids.get(file)!;
    };
    const broken = markdownPages().flatMap((page) => {
      const built = htmlOf(page);
      return internalLinks(built, readFileSync(join(out, built), "utf8"))
        .filter(([file, anchor]) => !existsSync(join(out, file)) || (anchor !== undefined && !idsOf(file).has(anchor)))
        .map(([file, anchor]) => `docs/${page} → ${file}${anchor === undefined ? "" : `#${anchor}`}`);
    });
    expect([...new Set(broken)]).toEqual([]);
  });

  describeWithTools(["chromium"], "in headless Chromium", () => {
    it("renders the quick start, every script and style loaded and nothing logged", async () => {
      const { server, url, requests } = await serve(out);
      try {
        const page = await dumpDom(requireTool("chromium"), `${url}/getting-started.html`, join(work, "chromium"));
        const rendered = {
          status: page.status,
          title: /<h1 id="quick-start-the-demo"[^>]*>([^<]*)/.exec(page.dom)?.[1]?.trim(),
          prose: page.dom.includes("Once Ready, the demo prints its kubeconfig, a "),
          sidebar: ["Getting started", "Concepts", "User guide", "Operator guide", "Module author guide", "Reference"].filter((chapter) =>
            page.dom.includes(`>${chapter}</h2>`),
          ).length,
        };
        expect(rendered).toEqual({ status: 0, title: "Quick start: the demo", prose: true, sidebar: 6 });
        expect(page.console).toEqual([]);
        expect(requests.filter((request) => request.status !== 200 && request.path !== "/favicon.ico")).toEqual([]);
        expect(requests.some((request) => /^\/assets\/app\.[\w-]+\.js$/.test(request.path))).toBe(true);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    }, 120_000);
  });
});

it("never ignores dead links", () => {
  expect(readFileSync(join(packageRoot, ".vitepress/config.mts"), "utf8")).not.toContain("ignoreDeadLinks");
});
