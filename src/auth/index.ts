// Public surface of auth/: the Principal every request carries.
export { LOGIN_PRINCIPAL, type Principal } from './principal.js';
