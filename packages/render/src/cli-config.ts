/**
 * The OpenTofu/Terraform CLI configuration that installs providers only from the image's
 * filesystem mirror. The three-segment `*\/*\/*` pattern matches providers of every
 * registry host; the two-segment form would match the default registry only.
 */
export function renderCliConfig(options: { providersDir: string }): string {
  const path = JSON.stringify(options.providersDir);
  return [
    "provider_installation {",
    "  filesystem_mirror {",
    `    path    = ${path}`,
    '    include = ["*/*/*"]',
    "  }",
    "  direct {",
    '    exclude = ["*/*/*"]',
    "  }",
    "}",
    "",
  ].join("\n");
}
