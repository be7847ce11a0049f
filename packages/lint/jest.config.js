import { jestProject } from "../../jest.base.js";
export default jestProject(import.meta.url, { displayName: "lint" });
