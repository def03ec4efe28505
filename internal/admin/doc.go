// Package admin serves the admin API every service exposes on its admin
// port (never the public one): the mode and its mechanisms, the simulated
// faults, and the metrics. Reads are open; changes need
// "Authorization: Bearer <token>" when a token is configured.
//
//	GET  /admin/mode              the settings in force
//	PUT  /admin/mode              switch mode and mechanisms; on the gateway,
//	                              the whole shop (fan-out to every service)
//	GET  /admin/peers             the services a switch fans out to
//	GET  /admin/faults            the faults in force
//	PUT  /admin/faults            replace them all
//	PUT  /admin/faults/{method}   set one method's
//	DELETE /admin/faults          clear them all
//	DELETE /admin/faults/{method} clear one method's
//	GET  /metrics                 Prometheus text exposition
//
// Client is the one client of this API: mercado mode and mercado fault,
// the labs' shop driver, and the gateway's fan-out all call through it.
package admin
