// ESLint over the paths biome.json's files.includes lists, the one list the formatter, this linter and
// scripts/check-line-length.mjs read: type-aware typescript-eslint rules on TypeScript, the rules that need no types
// on JavaScript. docs/testing.md#formatting-and-lint says why each rule is here.
import { readFileSync } from "node:fs";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

const biome = JSON.parse(readFileSync(new URL("./biome.json", import.meta.url), "utf8"));
const included = biome.files.includes.filter((pattern) => !pattern.startsWith("!"));
// Biome's "!path" leaves out a file or a folder; ESLint wants the file itself and the files under a folder.
const excluded = biome.files.includes
  .filter((pattern) => pattern.startsWith("!"))
  .flatMap((pattern) => [pattern.slice(1), `${pattern.slice(1)}/**`]);
// Biome skips what .gitignore names (dist/, coverage/, ...); so does ESLint. Its lines are folders or file globs.
const gitIgnored = readFileSync(new URL("./.gitignore", import.meta.url), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"))
  .map((line) => (line.slice(0, -1).includes("/") ? line : `**/${line}`))
  .map((line) => (line.endsWith("/") ? `${line}**` : line));

const typeScript = ["**/*.ts", "**/*.mts", "**/*.cts"];
const javaScript = ["**/*.js", "**/*.mjs", "**/*.cjs"];

// Each package's tests and sources type-check under its tsconfig.test.json (its tsconfig.json leaves the tests out):
// one program per package, and a file is linted with its own package's.
const testProjects = included.map((pattern) => /^(packages\/[^/]+|e2e)\/\*\*$/.exec(pattern)?.[1]).filter((dir) => dir !== undefined);

const shared = {
  "no-unused-vars": "off",
  "@typescript-eslint/no-unused-vars": [
    "error",
    { args: "after-used", argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
  ],
  "no-unused-expressions": "off",
  "@typescript-eslint/no-unused-expressions": ["error", { allowShortCircuit: false, allowTernary: false, allowTaggedTemplates: false }],
};

const typeAware = {
  "@typescript-eslint/no-floating-promises": "error",
  "@typescript-eslint/no-misused-promises": "error",
  "@typescript-eslint/no-unsafe-assignment": "error",
  "@typescript-eslint/no-unsafe-member-access": "error",
  "@typescript-eslint/no-unsafe-call": "error",
  "@typescript-eslint/no-unsafe-return": "error",
  "@typescript-eslint/no-unsafe-argument": "error",
};

// No function in a package's source longer than 120 lines, every line counted; tests and generated files aside.
const longFunctionRule = { "max-lines-per-function": ["error", { max: 120, skipBlankLines: false, skipComments: false, IIFEs: true }] };

export default defineConfig(
  // Everything the list does not name is left alone (ESLint would otherwise lint every .js file it finds).
  {
    ignores: [...javaScript, ...typeScript, ...included.map((pattern) => `!${pattern}`), ...excluded, ...gitIgnored],
  },
  {
    files: [...javaScript, ...typeScript],
    linterOptions: { reportUnusedDisableDirectives: "error" },
    plugins: { "@typescript-eslint": tseslint.plugin },
    languageOptions: { parser: tseslint.parser, ecmaVersion: 2023, sourceType: "module" },
    rules: shared,
  },
  { files: ["**/*.cjs"], languageOptions: { sourceType: "commonjs" } },
  ...testProjects.map((dir) => ({
    files: typeScript.map((pattern) => `${dir}/${pattern}`),
    languageOptions: { parserOptions: { project: `${dir}/tsconfig.test.json`, tsconfigRootDir: import.meta.dirname } },
    rules: typeAware,
  })),
  {
    files: typeScript.map((pattern) => `packages/*/src/${pattern}`),
    ignores: ["**/*.test.ts", "**/*.test-support.ts", "**/*.generated.ts"],
    rules: longFunctionRule,
  },
);
