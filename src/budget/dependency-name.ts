/** The dependency-name rule moved to src/common/names.ts (one rule for every store); kept for importers. */
export { assertDependencyName, dependencyNameProblem, MAX_DEPENDENCY_LENGTH } from '../common/names.js';
