// The captf book: VitePress around the Markdown pages of docs/ (they stay readable on GitHub as
// they are). `pnpm --filter @captf/docs book` builds it; src/book.integration.test.ts builds it in its test.
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type DefaultTheme } from "vitepress";
import { headingAnchor } from "../src/anchors.ts";

const repository = "https://github.com/captf-io/captf";
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const docsDir = resolve(repoRoot, "docs");
// The pages live outside this package, where pnpm links no vue: take VitePress's own.
const vueDir = dirname(createRequire(createRequire(import.meta.url).resolve("vitepress")).resolve("vue/package.json"));

/** One runbook page per alert (packages/controller's monitoring test keeps them one to one). */
const runbooks = readdirSync(resolve(docsDir, "runbooks"))
  .filter((name) => name.endsWith(".md") && name !== "index.md")
  .map((name) => name.slice(0, -".md".length))
  .sort();

/** The book's chapters: every page of docs/ belongs to one (src/book.integration.test.ts checks it). */
export const sidebar: DefaultTheme.SidebarItem[] = [
  {
    text: "Getting started",
    items: [
      { text: "Introduction", link: "/" },
      { text: "Quick start: the demo", link: "/getting-started" },
    ],
  },
  {
    text: "Concepts",
    items: [
      { text: "How captf works", link: "/concepts" },
      { text: "The lifecycle of an object", link: "/lifecycle" },
      { text: "The inputs hash", link: "/inputs-hash" },
    ],
  },
  {
    text: "User guide",
    items: [
      { text: "Clusters with clusterctl", link: "/clusterctl" },
      { text: "Identities and credentials", link: "/identities" },
      { text: "Machine templates and scale from zero", link: "/machine-templates" },
      { text: "kubectl captf", link: "/kubectl-captf" },
      { text: "GCP machine pool module", link: "/modules/gcp-machinepool" },
      { text: "Azure machine pool module", link: "/modules/azure-machinepool" },
    ],
  },
  {
    text: "Operator guide",
    items: [
      { text: "Installing captf", link: "/installation" },
      { text: "Security: what a module can reach", link: "/security" },
      { text: "Webhooks", link: "/webhooks" },
      { text: "Metrics and alerts", link: "/metrics" },
      { text: "Notifications", link: "/notifications" },
      { text: "Tracing", link: "/tracing" },
      { text: "Scaling the manager: shards", link: "/scaling" },
      { text: "Reliability drills", link: "/reliability" },
      {
        text: "Runbooks",
        link: "/runbooks/",
        collapsed: true,
        items: runbooks.map((alert) => ({ text: alert, link: `/runbooks/${alert}` })),
      },
    ],
  },
  {
    text: "Module author guide",
    items: [
      { text: "Writing a module", link: "/module-authors" },
      { text: "The module contract as code", link: "/contract" },
      { text: "The module image contract", link: "/image-contract" },
      { text: "The runner", link: "/runner" },
      { text: "tfcapi-lint", link: "/tfcapi-lint" },
    ],
  },
  {
    text: "Reference",
    items: [
      { text: "API", link: "/api-reference" },
      { text: "Manager flags", link: "/manager-flags" },
      { text: "Metrics", link: "/metrics#captf_" },
      { text: "Events", link: "/events" },
      { text: "Conditions", link: "/conditions" },
      { text: "Lint checks", link: "/reference/lint-checks" },
      { text: "Contract inputs and outputs", link: "/reference/inputs" },
    ],
  },
  {
    text: "Development",
    items: [
      { text: "Testing with real components", link: "/testing" },
      { text: "The end-to-end plane", link: "/e2e" },
    ],
  },
];

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export default defineConfig({
  title: "captf",
  description: "A Cluster API infrastructure provider that runs Terraform and OpenTofu modules",
  srcDir: "../../docs",
  outDir: process.env.CAPTF_BOOK_OUT ?? "./dist/book",
  cacheDir: process.env.CAPTF_BOOK_CACHE ?? "./.vitepress/cache",
  lastUpdated: false,
  vite: { resolve: { alias: [{ find: /^vue(?=$|\/)/, replacement: vueDir }] } },
  markdown: {
    anchor: { slugify: headingAnchor },
    config(md) {
      // The pages are plain Markdown: `<name>` placeholders in prose are text, not Vue elements;
      // HTML comments (the generated-block markers) are dropped.
      const htmlAsText = (tokens: { content: string }[], index: number) => {
        const content = tokens[index]!.content;
        return /^\s*<!--[\s\S]*-->\s*$/.test(content) ? "" : escapeHtml(content);
      };
      md.renderer.rules.html_block = htmlAsText;
      md.renderer.rules.html_inline = htmlAsText;
      // `{{ … }}` in prose or inline code (a Prometheus or cloud-init template) is text, not Vue's
      // interpolation; fenced code is v-pre already.
      const inlineCode = md.renderer.rules.code_inline!;
      md.renderer.rules.code_inline = (...args) => inlineCode(...args).replace(/^<code/, "<code v-pre");
      const text = md.renderer.rules.text!;
      md.renderer.rules.text = (...args) => text(...args).replace(/\{\{/g, "&#123;&#123;");
      // A link out of docs/ to a file of the repository (a package, a manifest) goes to GitHub;
      // one whose target does not exist stays as it is, so the dead-link check reports it.
      md.core.ruler.push("captf-repository-links", (state) => {
        const page = (state.env as { path?: string }).path;
        if (!page) return;
        for (const block of state.tokens) {
          for (const token of block.children ?? []) {
            if (token.type !== "link_open") continue;
            const href = token.attrGet("href");
            if (!href || /^[a-z]+:|^#|^\//i.test(href)) continue;
            const [path, anchor] = href.split("#", 2) as [string, string | undefined];
            const target = resolve(dirname(page), decodeURIComponent(path));
            if (!relative(docsDir, target).startsWith("..") || !existsSync(target)) continue;
            token.attrSet("href", `${repository}/tree/main/${relative(repoRoot, target)}${anchor ? `#${anchor}` : ""}`);
          }
        }
      });
    },
  },
  themeConfig: {
    nav: [
      { text: "Quick start", link: "/getting-started" },
      { text: "Runbooks", link: "/runbooks/" },
      { text: "Reference", link: "/api-reference" },
    ],
    sidebar,
    outline: { level: [2, 3] },
    search: { provider: "local" },
    editLink: { pattern: `${repository}/edit/main/docs/:path` },
    socialLinks: [{ icon: "github", link: repository }],
  },
});
