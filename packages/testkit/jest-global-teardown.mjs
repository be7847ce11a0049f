// jest globalTeardown: stops the plane jest-global-setup.mjs started (every process, then the temp dir).
export default async function teardown() {
  const plane = globalThis.captfControlPlane;
  if (!plane) return;
  globalThis.captfControlPlane = undefined;
  delete process.env.CAPTF_CONTROL_PLANE;
  await plane.stop();
}
