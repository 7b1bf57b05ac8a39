import { mariadbUnavailable, referenceUnavailable } from "./reference.js";
import { importScenario } from "./scenario.js";

importScenario("mariadb", referenceUnavailable() ?? (await mariadbUnavailable()));
