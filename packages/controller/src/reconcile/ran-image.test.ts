// The digest a succeeded apply pins (what destroy, refresh, drift and restore run later): the one its Job named when it named one.
// Found by the e2e's signed scenario: under a TerraformModulePolicy the apply ran the signed index digest, the chroot kubelet reported
// the platform manifest's digest as the Pod's imageID (as some runtimes do), and the restore Job was held SignatureMissing on it.
import { describe, expect, it } from "@jest/globals";
import type { V1Job } from "@kubernetes/client-node";
import { ranImageId } from "./observe-jobs.js";

const index = `sha256:${"1".repeat(64)}`;
const platform = `sha256:${"2".repeat(64)}`;
const jobRunning = (image: string): V1Job => ({
  spec: { template: { spec: { containers: [{ name: "source", image }] } } },
});

describe("ranImageId", () => {
  it.each([
    [
      "a Job that named a digest: that digest, whatever the Pod reports",
      `r.example/m@${index}`,
      `r.example/m@${platform}`,
      `r.example/m@${index}`,
    ],
    [
      "a Job that named a tag: the Pod's image ID",
      "r.example/m:v1",
      `docker-pullable://r.example/m@${platform}`,
      `docker-pullable://r.example/m@${platform}`,
    ],
    ["a Job that named a tag, no image ID yet: nothing", "r.example/m:v1", undefined, undefined],
    ["a Job that named a tag, an empty image ID: nothing", "r.example/m:v1", "", undefined],
  ])("%s", (_case, image, podImageId, ran) => {
    expect(ranImageId(jobRunning(image), podImageId)).toBe(ran);
  });
});
