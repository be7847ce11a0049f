import { afterEach, describe, expect, it } from "@jest/globals";
import { closeProfiler, openProfiler } from "./profiler.js";

describe("openProfiler", () => {
  afterEach(() => closeProfiler());

  it("is off for an empty address or 0", () => {
    expect(openProfiler("")).toBeUndefined();
    expect(openProfiler("0")).toBeUndefined();
  });

  it("opens the Node inspector on the address", async () => {
    const url = openProfiler("127.0.0.1:0");
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+$/);
    const port = new URL(url!).port;
    const listing = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string }[];
    expect(listing[0]?.type).toBe("node");
  });
});
