import base from "../jest.base.js";
// One management plane for the whole suite, started by the suite itself (it needs Cluster API's
// manager and captf's Deployment, unlike the packages' shared plane).
export default { ...base, displayName: "e2e" };
