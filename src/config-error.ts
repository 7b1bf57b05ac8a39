/** A setting that cannot be used; the message names it (variable, or file, section and option). */
export class ConfigError extends Error {}
