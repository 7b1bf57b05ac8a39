/**
 * Resource class bodies (from 1.2), as Placement's schemas/resource_class.py.
 * From 1.7 PUT /resource_classes/{name} has no body; the name in its path is
 * checked with the same schema, so its failure reads the same.
 */
import { z } from "zod";
import { CUSTOM_RESOURCE_CLASS } from "./common.js";
import { versioned } from "./versioned.js";

const CLASS_BODY = z.strictObject({ name: CUSTOM_RESOURCE_CLASS });

/** POST /resource_classes. */
export const POST_RESOURCE_CLASS = versioned([{ from: "1.2", schema: CLASS_BODY }]);

/** PUT /resource_classes/{name} up to 1.6: a rename to the body's name. */
export const PUT_RESOURCE_CLASS = versioned([{ from: "1.2", schema: CLASS_BODY }], { until: "1.7" });

/** PUT /resource_classes/{name} from 1.7: the path parameters, {name} (create if missing). */
export const RESOURCE_CLASS_PATH = versioned([{ from: "1.7", schema: CLASS_BODY }]);
