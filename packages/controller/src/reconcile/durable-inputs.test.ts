import { describe, expect, it } from "@jest/globals";
import { parseUnpullableImages, withUnpullableImage } from "./durable-inputs.js";

describe("captf.io/unpullable-images", () => {
  it.each([
    ["absent", undefined, []],
    ["a JSON list", '["m@sha256:aa","m:v1"]', ["m@sha256:aa", "m:v1"]],
    ["a list with entries that are not strings", '["m:v1",3,null]', ["m:v1"]],
    ["not a list", '{"m:v1":true}', []],
    ["not JSON", "m:v1", []],
  ])("reads %s", (_name, text, images) => {
    expect(parseUnpullableImages(text)).toEqual(images);
  });

  it.each([
    ["adds an image", ["m@sha256:aa"], "m:v1", ["m@sha256:aa", "m:v1"]],
    ["lists an image once", ["m@sha256:aa", "m:v1"], "m:v1", ["m@sha256:aa", "m:v1"]],
    ["keeps the newest three (a Job picks among three images)", ["a", "b", "c"], "d", ["b", "c", "d"]],
  ])("%s", (_name, listed, image, after) => {
    expect(withUnpullableImage(listed, image)).toEqual(after);
  });
});
