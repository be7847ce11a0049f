import { jestProject } from "../jest.base.js";
// One management plane for the whole suite, started by the suite itself (it needs Cluster API's
// manager and captf's Deployment, unlike the packages' shared plane).
export default jestProject(import.meta.url, { displayName: "e2e" });
