// Public surface of @captf/controller.
export * from "./api/index.js";
export * from "./webhooks/index.js";
