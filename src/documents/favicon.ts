/** The service's icon (indexers such as x402scan show it beside the listing): served free at FAVICON_PATH. */
export const FAVICON_PATH = "/favicon.svg";

export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">' +
  '<rect width="64" height="64" rx="12" fill="#0052ff"/>' +
  '<path d="M16 18h32v7H16zM16 29h32v7H16zM16 40h20v7H16z" fill="#fff"/>' +
  "</svg>\n";
