import { describe, expect, it } from "@jest/globals";
import { renderCliConfig } from "./cli-config.js";

describe("renderCliConfig", () => {
  it("installs every provider host from the mirror and none directly", () => {
    expect(renderCliConfig({ providersDir: "/captf/providers" })).toBe(
      'provider_installation {\n  filesystem_mirror {\n    path    = "/captf/providers"\n    include = ["*/*/*"]\n  }\n' +
        '  direct {\n    exclude = ["*/*/*"]\n  }\n}\n',
    );
  });

  it("quotes a path with special characters", () => {
    expect(renderCliConfig({ providersDir: '/tmp/a "b"' })).toContain('path    = "/tmp/a \\"b\\""');
  });
});
