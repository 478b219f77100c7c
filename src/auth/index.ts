// Public surface of auth/: the Principal every request carries, and bearer-token verification.
export {
  LOGIN_PRINCIPAL,
  principalIdentity,
  type Principal,
} from './principal.js';
export {
  AuthenticationError,
  createTokenVerifier,
  isAllowedRoleName,
  mintToken,
  type TokenVerifier,
  type TokenVerifierOptions,
} from './token.js';
export {
  developmentSecretFile,
  jwtSecret,
  stateSecret,
  type SigningSecretSettings,
} from './state-secret.js';
export {
  protectedResourceMetadata,
  tokenAudience,
  tokenIssuer,
  type AudienceSettings,
  type ProtectedResource,
} from './resource-metadata.js';
export {
  claimedScopes,
  createScopePolicy,
  SCOPED_METHOD_GROUPS,
  type ScopePolicy,
  type ScopeSettings,
} from './scope-policy.js';
