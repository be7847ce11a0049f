// The platforms module images are built for, as OCI names them: shared by the image builder (captf-module) and the tests.

/** OCI names of the architectures module images are built for (linux/amd64, linux/arm64). */
export const imageArchitectures = ["amd64", "arm64"] as const;
export type ImageArchitecture = (typeof imageArchitectures)[number];

/** This machine's architecture as OCI names it (Node's x64 is amd64). */
export const hostArchitecture: string = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch] ?? process.arch;
