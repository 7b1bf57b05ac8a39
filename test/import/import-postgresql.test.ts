import { referenceUnavailable } from "./reference.js";
import { importScenario } from "./scenario.js";

importScenario("postgresql", referenceUnavailable());
