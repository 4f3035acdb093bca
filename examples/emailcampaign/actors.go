package main

import (
	"bytes"
	"fmt"
	"net/smtp"
	"text/template"

	"github.com/asynkron/protoactor-go/actor"
)

// Email is a message ready to send.
type Email struct {
	To   string
	Body []byte
}

// sendResult answers an Email sent to an EmailSender.
type sendResult struct{ err error }

// createResult answers a Recipient sent to the EmailCreator.
type createResult struct {
	email *Email
	err   error
}

const fromAddress = "campaign@foreman.example"

// DefaultTemplate is the campaign's email; it is filled per recipient.
const DefaultTemplate = `From: Foreman <{{.From}}>
To: {{.R.Name}} <{{.R.Email}}>
Subject: News for {{.R.City}}, {{.R.Name}}

Dear {{.R.Name}},

this month's newsletter for our readers in {{.R.City}} is out.
You receive it as reader #{{.R.ID}}.

The Foreman team
`

// emailCreator is the seed's Email Creator: it fills the template with a
// recipient's context and answers the complete email.
type emailCreator struct {
	tmpl *template.Template
	buf  bytes.Buffer
}

func newEmailCreatorProps(text string) (*actor.Props, error) {
	tmpl, err := template.New("email").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: parse template: %w", err)
	}
	return actor.PropsFromProducer(func() actor.Actor { return &emailCreator{tmpl: tmpl} }), nil
}

func (e *emailCreator) Receive(c actor.Context) {
	r, ok := c.Message().(*Recipient)
	if !ok {
		return
	}
	e.buf.Reset()
	if err := e.tmpl.Execute(&e.buf, struct {
		From string
		R    *Recipient
	}{fromAddress, r}); err != nil {
		c.Respond(&createResult{err: fmt.Errorf("emailcampaign: template for %s: %w", r.Email, err)})
		return
	}
	body := bytes.ReplaceAll(e.buf.Bytes(), []byte("\n"), []byte("\r\n"))
	c.Respond(&createResult{email: &Email{To: r.Email, Body: body}})
}

// emailSender is the seed's Email Sender: it keeps one SMTP connection open
// (reconnecting after an error) and sends each email it is asked to.
type emailSender struct {
	addr   string
	client *smtp.Client
}

func newEmailSenderProps(addr string) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &emailSender{addr: addr} })
}

func (s *emailSender) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *Email:
		err := s.send(msg)
		if err != nil {
			s.close() // reconnect for the next email
		}
		c.Respond(&sendResult{err: err})
	case *actor.Stopping:
		if s.client != nil {
			_ = s.client.Quit()
			s.close()
		}
	}
}

func (s *emailSender) send(e *Email) error {
	if s.client == nil {
		cl, err := smtp.Dial(s.addr)
		if err != nil {
			return fmt.Errorf("emailcampaign: connect to smtp %s: %w", s.addr, err)
		}
		if err := cl.Hello("campaign.foreman.example"); err != nil {
			_ = cl.Close()
			return fmt.Errorf("emailcampaign: smtp hello: %w", err)
		}
		s.client = cl
	}
	if err := s.client.Mail(fromAddress); err != nil {
		return fmt.Errorf("emailcampaign: smtp MAIL: %w", err)
	}
	if err := s.client.Rcpt(e.To); err != nil {
		return fmt.Errorf("emailcampaign: smtp RCPT %s: %w", e.To, err)
	}
	w, err := s.client.Data()
	if err != nil {
		return fmt.Errorf("emailcampaign: smtp DATA: %w", err)
	}
	if _, err := w.Write(e.Body); err != nil {
		return fmt.Errorf("emailcampaign: smtp body: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("emailcampaign: smtp end of data: %w", err)
	}
	return nil
}

func (s *emailSender) close() {
	if s.client != nil {
		_ = s.client.Close()
		s.client = nil
	}
}
