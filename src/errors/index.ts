export { BrokenCircuitError, isBrokenCircuitError } from './broken-circuit-error.js';
export { ClaimLostError, isClaimLostError } from './claim-lost-error.js';
export { CorruptBudgetStateError, isCorruptBudgetStateError } from './corrupt-budget-state-error.js';
export { InvalidInputError, isInvalidInputError } from './invalid-input-error.js';
export { isPermanentError, PermanentError } from './permanent-error.js';
export { isRedactionFailedError, RedactionFailedError } from './redaction-failed-error.js';
export { isTransientError, TransientError } from './transient-error.js';
export { isUnstorableValueError, UnstorableValueError } from './unstorable-value-error.js';
export { isValidationError, ValidationError, type ValidationIssue } from './validation-error.js';
